# The ISA paths compiled into posenc for the target processor, baseline first
# (the link order src/CMakeLists.txt relies on). Each path is one translation
# unit in src/arch/ compiled with only its own flags; everything else is
# compiled for the processor's baseline.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(POSENC_ISA_PATHS baseline avx2 avx512)
  set(POSENC_ISA_FLAGS_avx512 -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx512vl -mavx2 -mfma -mf16c
      # GCC 12 warns inside its own AVX-512 intrinsics (_mm512_undefined_*),
      # inlined throughout xsimd (nearbyint, shifts, max, ...): "may be" in
      # optimized builds, "is used" in the sanitizer build.
      $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized> $<$<CXX_COMPILER_ID:GNU>:-Wno-uninitialized>)
  set(POSENC_ISA_FLAGS_avx2 -mavx2 -mfma -mf16c)
  # Kernels of the AVX-512 path that need AVX512-BF16, chosen at run time.
  set(POSENC_ISA_EXTENSIONS avx512_bf16)
  set(POSENC_ISA_FLAGS_avx512_bf16 ${POSENC_ISA_FLAGS_avx512} -mavx512bf16)
  set(POSENC_ISA_FLAGS_baseline "")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(POSENC_ISA_PATHS neon)
  set(POSENC_ISA_FLAGS_neon "")
else()
  message(FATAL_ERROR "posenc supports x86-64 and aarch64, not ${CMAKE_SYSTEM_PROCESSOR}")
endif()
