#include "runtime/cpu_features.hpp"

namespace posenc {

bool cpu_supports(posenc_isa isa) {
#if defined(__x86_64__)
  // __builtin_cpu_supports also checks that the OS saves the vector state.
  switch (isa) {
    case POSENC_ISA_BASELINE:
      return true;
    case POSENC_ISA_AVX2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case POSENC_ISA_AVX512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    default:
      return false;
  }
#elif defined(__aarch64__)
  return isa == POSENC_ISA_NEON || isa == POSENC_ISA_BASELINE;
#else
#error "posenc supports x86-64 and aarch64"
#endif
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  return cpu_supports(POSENC_ISA_AVX512) && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

}  // namespace posenc
