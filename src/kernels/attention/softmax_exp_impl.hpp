// exp(x) for softmax arguments x = score - row maximum <= 0, templated on
// the xsimd arch. About half the instructions of xsimd::exp, which handles
// the whole float range: here no overflow is possible, and results below
// FLT_MIN (arguments below -87.33), negligible next to the row maximum's 1,
// are flushed to 0.
#pragma once

#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace posenc::kernels {

// How exactly softmax_exp works: to fp32's precision, or to the precision
// that probabilities rounded to bf16 (8 significant bits) can show.
enum class ExpPrecision { f32, bf16 };

// e^r for |r| <= ln2 / 2: a polynomial fitted for relative error, degree 5
// for f32 (1.1e-7; 1.8e-7 evaluated in fp32), degree 3 for bf16 (1.2e-4,
// 1/32 of a bf16 rounding step).
template <class Arch, ExpPrecision precision>
xsimd::batch<float, Arch> exp_near_zero(xsimd::batch<float, Arch> r) {
  using batch = xsimd::batch<float, Arch>;
  batch p;
  if constexpr (precision == ExpPrecision::f32) {
    p = xsimd::fma(batch(8.31253e-3f), r, batch(4.189011e-2f));
    p = xsimd::fma(p, r, batch(0.16667114f));
    p = xsimd::fma(p, r, batch(0.4999923f));
  } else {
    p = xsimd::fma(batch(0.16662812f), r, batch(0.50394106f));
  }
  p = xsimd::fma(p, r, batch(1.0f));
  return xsimd::fma(p, r, batch(1.0f));
}

// exp(x) = 2^n e^r with n = round(x / ln2) and r = x - n ln2, ln2 split in
// two (Cody-Waite) so that n * hi is exact for |n| < 2^9.
template <class Arch, ExpPrecision precision>
xsimd::batch<float, Arch> exp_reduced(xsimd::batch<float, Arch> x,
                                      xsimd::batch<float, Arch>& n) {
  using batch = xsimd::batch<float, Arch>;
  n = xsimd::nearbyint(x * batch(1.44269504f));
  batch r = xsimd::fma(n, batch(-0.693359375f), x);
  r = xsimd::fma(n, batch(2.12194440e-4f), r);
  return exp_near_zero<Arch, precision>(r);
}

// exp(x) for x <= 0 (or NaN, which stays NaN; -inf gives 0). Arguments above
// 0 are outside the domain. Below ln(FLT_MIN) the result is 0: no subnormal
// is ever computed (each would cost a microcode assist).
template <class Arch, ExpPrecision precision = ExpPrecision::f32>
xsimd::batch<float, Arch> softmax_exp(xsimd::batch<float, Arch> x) {
  using batch = xsimd::batch<float, Arch>;
  const batch lowest(-87.33654f);  // from here on 2^n e^r is a normal float
  const auto underflow = x < lowest;
  batch n;
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    // maxps returns its second operand for a NaN: x's NaN passes.
    const batch e = exp_reduced<Arch, precision>(_mm512_max_ps(lowest, x), n);
    return xsimd::select(underflow, batch(0.0f), batch(_mm512_scalef_ps(e, n)));
  } else
#endif
  {
    const batch e = exp_reduced<Arch, precision>(xsimd::select(underflow, lowest, x), n);
    using ibatch = xsimd::batch<int32_t, Arch>;
    const ibatch exponent = (xsimd::batch_cast<int32_t>(n) + ibatch(127)) << 23;
    return xsimd::select(underflow, batch(0.0f), e * xsimd::bitwise_cast<batch>(exponent));
  }
}

}  // namespace posenc::kernels
