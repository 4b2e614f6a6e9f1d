// x * y + z for the kernels' batches, templated on the xsimd arch: one
// rounding where the path has FMA instructions (AVX-512, AVX2, NEON), a
// product and a sum on SSE2. xsimd 8.1's fma on AVX-512 is x * y + z, whose
// rounding is left to the compiler's contraction (GCC's Release build fused
// it, clang's TSan and fuzz builds need not): there it is the instruction
// itself, so that the kernels' multiply-adds round the same in every build.
// (xsimd's sincos, under the sinusoids and RoPE's angles, still rounds as
// the compiler contracts it; -ffp-contract=off for the kernels would fix
// that at up to 30% of some kernels' speed.)
#pragma once

#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace posenc::kernels {

template <class Arch>
xsimd::batch<float, Arch> fused_multiply_add(xsimd::batch<float, Arch> x,
                                             xsimd::batch<float, Arch> y,
                                             xsimd::batch<float, Arch> z) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    return _mm512_fmadd_ps(x, y, z);
  } else
#endif
  {
    return xsimd::fma(x, y, z);
  }
}

}  // namespace posenc::kernels
