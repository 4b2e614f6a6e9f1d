# Cross-compiling posenc for aarch64 with Debian's crossbuild-essential-arm64
# against a sysroot from scripts/make-arm64-sysroot.sh (POSENC_ARM64_SYSROOT).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT POSENC_ARM64_SYSROOT)
  set(POSENC_ARM64_SYSROOT "$ENV{POSENC_ARM64_SYSROOT}")
endif()
if(NOT POSENC_ARM64_SYSROOT)
  message(FATAL_ERROR "set POSENC_ARM64_SYSROOT to the folder made by scripts/make-arm64-sysroot.sh")
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES POSENC_ARM64_SYSROOT)

# The toolchain's own files stay where the cross compiler keeps them; the
# extracted packages are searched in the sysroot.
set(CMAKE_FIND_ROOT_PATH ${POSENC_ARM64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(arm64_libs ${POSENC_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-L${arm64_libs} -Wl,-rpath-link,${arm64_libs}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-L${arm64_libs} -Wl,-rpath-link,${arm64_libs}")

# Tests run under qemu-user with plain NEON (its default CPU model has SVE,
# which would send oneDNN down another path). qemu-user hangs with more than
# one OpenMP thread, so emulated runs use one.
set(CMAKE_CROSSCOMPILING_EMULATOR
    env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu QEMU_CPU=cortex-a72
        LD_LIBRARY_PATH=${arm64_libs} OMP_NUM_THREADS=1 qemu-aarch64-static)
