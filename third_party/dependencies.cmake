# Finds posenc's dependencies, all from Debian's packages (installed by
# scripts/install-deps.sh), and checks the API generations posenc is written
# for. Included from the top-level CMakeLists.txt so the imported targets are
# visible everywhere.
find_package(dnnl 2.6 CONFIG REQUIRED)
find_package(xsimd 8.1 CONFIG REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
if(xsimd_VERSION VERSION_GREATER_EQUAL 9)
  message(FATAL_ERROR "posenc is written against the xsimd 8 API; found ${xsimd_VERSION}")
endif()
if(dnnl_VERSION VERSION_GREATER_EQUAL 3)
  message(FATAL_ERROR "posenc is written against the oneDNN 2.x API; found ${dnnl_VERSION}")
endif()

if(POSENC_BUILD_TESTS)
  find_package(GTest 1.10 REQUIRED)
endif()
if(POSENC_BUILD_BENCHMARKS)
  find_package(benchmark 1.5 REQUIRED)
endif()
if(POSENC_BUILD_TOOLS)
  find_package(PNG REQUIRED)
endif()

message(STATUS "posenc: oneDNN ${dnnl_VERSION}, xsimd ${xsimd_VERSION}, ISA paths: ${POSENC_ISA_PATHS}")
