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

// p * 2^n for integral n in [-126, 127].
template <class Arch>
xsimd::batch<float, Arch> times_exp2(xsimd::batch<float, Arch> p, xsimd::batch<float, Arch> n) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) return _mm512_scalef_ps(p, n);
#endif
  using ibatch = xsimd::batch<int32_t, Arch>;
  const ibatch exponent = (xsimd::batch_cast<int32_t>(n) + ibatch(127)) << 23;
  return p * xsimd::bitwise_cast<xsimd::batch<float, Arch>>(exponent);
}

// x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite: ln2 split so that n * hi is
// exact for |n| < 2^9), then exp(x) = 2^n p(r), p a polynomial fitted to e^r
// for relative error: degree 5 for f32 (1.1e-7; 1.8e-7 evaluated in fp32),
// degree 3 for bf16 (1.2e-4, 1/32 of a bf16 rounding step). NaN stays NaN,
// -inf gives 0. Arguments above 0 are outside the domain.
template <class Arch, ExpPrecision precision = ExpPrecision::f32>
xsimd::batch<float, Arch> softmax_exp(xsimd::batch<float, Arch> x) {
  using batch = xsimd::batch<float, Arch>;
  const batch lowest(-87.33654f);  // ln(FLT_MIN): 2^n stays a normal float
  const auto underflow = x < lowest;
  const batch clamped = xsimd::select(underflow, lowest, x);  // NaN passes through
  const batch n = xsimd::nearbyint(clamped * batch(1.44269504f));
  batch r = xsimd::fma(n, batch(-0.693359375f), clamped);
  r = xsimd::fma(n, batch(2.12194440e-4f), r);
  batch p;
  if constexpr (precision == ExpPrecision::f32) {
    p = xsimd::fma(batch(8.31253e-3f), r, batch(4.189011e-2f));
    p = xsimd::fma(p, r, batch(0.16667114f));
    p = xsimd::fma(p, r, batch(0.4999923f));
  } else {
    p = xsimd::fma(batch(0.16662812f), r, batch(0.50394106f));
  }
  p = xsimd::fma(p, r, batch(1.0f));
  p = xsimd::fma(p, r, batch(1.0f));
  return xsimd::select(underflow, batch(0.0f), times_exp2<Arch>(p, n));
}

}  // namespace posenc::kernels
