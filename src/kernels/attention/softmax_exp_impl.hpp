// exp(scale d) for softmax arguments d = score - row maximum <= 0, templated
// on the xsimd arch. About half the instructions of xsimd::exp, which handles
// the whole float range: here no overflow is possible, and results below
// kMinProbability (runtime/math_constants.hpp) are flushed to 0.
#pragma once

#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/batch_inline.hpp"
#include "kernels/elementwise/fused_multiply_add_impl.hpp"
#include "runtime/math_constants.hpp"

namespace posenc::kernels {

// How exactly the exponential works: to fp32's precision, or to the
// precision that probabilities rounded to bf16 (8 significant bits) can show.
enum class ExpPrecision { f32, bf16 };

inline constexpr float kLog2e = 1.44269504f;  // 1 / ln 2

// e^r for |r| <= ln2 / 2, a polynomial fitted for relative error: degree 5,
// 1.1e-7 (1.8e-7 evaluated in fp32).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> exp_near_zero(xsimd::batch<float, Arch> r) {
  using batch = xsimd::batch<float, Arch>;
  batch p = fused_multiply_add<Arch>(batch(8.31253e-3f), r, batch(4.189011e-2f));
  p = fused_multiply_add<Arch>(p, r, batch(0.16667114f));
  p = fused_multiply_add<Arch>(p, r, batch(0.4999923f));
  p = fused_multiply_add<Arch>(p, r, batch(1.0f));
  return fused_multiply_add<Arch>(p, r, batch(1.0f));
}

// 2^n p, given that the result is 0 where `flush` is set and a normal float
// elsewhere. AVX-512 leaves the flushed lanes out of its scalef: computing a
// subnormal there would cost a microcode assist per batch.
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> scale_by_power_of_2(
    xsimd::batch<float, Arch> p, xsimd::batch<float, Arch> n,
    xsimd::batch_bool<float, Arch> flush) {
  using batch = xsimd::batch<float, Arch>;
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    return _mm512_maskz_scalef_ps(__mmask16(~__mmask16(flush)), p, n);
  } else
#endif
  {
    // Flushed lanes may hold any n (even -inf or NaN): their exponent bits
    // are discarded.
    using ibatch = xsimd::batch<int32_t, Arch>;
    const ibatch exponent = (xsimd::batch_cast<int32_t>(n) + ibatch(127)) << 23;
    return xsimd::select(flush, batch(0.0f), p * xsimd::bitwise_cast<batch>(exponent));
  }
}

// x rounded to the nearest integer (ties to even) where |x| < 2^22, NaN and
// -inf kept; other lanes get a value the caller discards (softmax_exp
// flushes them). xsimd 8.1 takes nine instructions on SSE2, which has no
// rounding instruction, and on NEON, whose frintn it does not use: here
// SSE2 adds and subtracts 1.5 * 2^23 (the add rounds; the constant is even,
// so ties go to even), NEON has frintn.
#if defined(__FAST_MATH__)
#error "posenc's kernels need IEEE arithmetic: -ffast-math folds (x + c) - c to x"
#endif
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> nearest_integer(xsimd::batch<float, Arch> x) {
  using batch = xsimd::batch<float, Arch>;
#if XSIMD_WITH_NEON64
  if constexpr (std::is_base_of_v<xsimd::neon64, Arch>) {
    return vrndnq_f32(x);
  } else
#endif
  if constexpr (std::is_same_v<Arch, xsimd::sse2>) {
    const batch shifter(0x1.8p23f);
    return (x + shifter) - shifter;
  } else {
    return xsimd::nearbyint(x);
  }
}

// exp(x) for x <= 0 (or NaN, which stays NaN; -inf gives 0): 2^n e^r with
// n = round(x / ln2) and r = x - n ln2, ln2 split in two (Cody-Waite) so that
// n * hi is exact for |n| < 2^9. 0 below ln(kMinProbability).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> softmax_exp(xsimd::batch<float, Arch> x) {
  using batch = xsimd::batch<float, Arch>;
  const auto flush = x < batch(kMinProbabilityLog);
  const batch n = nearest_integer<Arch>(x * batch(kLog2e));
  batch r = fused_multiply_add<Arch>(n, batch(-0.693359375f), x);
  r = fused_multiply_add<Arch>(n, batch(2.12194440e-4f), r);
  return scale_by_power_of_2<Arch>(exp_near_zero<Arch>(r), n, flush);
}

// 2^f for 0 <= f <= 1, degree 3: 1.2e-4 relative, 1/32 of a bf16 rounding
// step (the degree-3 fit of e^r on |r| <= ln2 / 2 with r = (f - 1/2) ln2,
// times sqrt 2; 2^0 comes out 1 - 1.2e-4, and p(1) = 2 p(0) to that error).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> exp2_unit_interval(xsimd::batch<float, Arch> f) {
  using batch = xsimd::batch<float, Arch>;
  batch p = fused_multiply_add<Arch>(batch(0.0784765109f), f, batch(0.224694625f));
  p = fused_multiply_add<Arch>(p, f, batch(0.696706116f));
  return fused_multiply_add<Arch>(p, f, batch(0.999877274f));
}

// 2^t for t <= 0 (or NaN, which stays NaN; -inf gives 0), to bf16
// precision: 2^n 2^f with n = floor(t) and f = t - n in [0, 1] (f is 1 where
// t is just below an integer and t - n rounds up; 2^n p(1) then equals
// 2^(n+1) p(0)). 0 below 2^kMinProbabilityExponent (the result there may
// be up to 1.2e-4 below kMinProbability).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> softmax_exp2(xsimd::batch<float, Arch> t) {
  using batch = xsimd::batch<float, Arch>;
  const auto flush = t < batch(float(kMinProbabilityExponent));
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    // f from one reduce; scalef takes the floor of t itself.
    const batch f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_maskz_scalef_ps(__mmask16(~__mmask16(flush)), exp2_unit_interval<Arch>(f), t);
  } else
#endif
  {
    const batch n = xsimd::floor(t);
    return scale_by_power_of_2<Arch>(exp2_unit_interval<Arch>(t - n), n, flush);
  }
}

// exp(scale d) for d <= 0 to `precision`. bf16 precision goes through 2^t
// with t = d (scale / ln2): the factor's and the product's roundings cost at
// most 1e-5 relative for |t| <= 64, and the reduction needs no Cody-Waite.
template <class Arch, ExpPrecision precision>
class ScaledExp {
 public:
  using batch = xsimd::batch<float, Arch>;

  explicit ScaledExp(float scale)
      : factor_(precision == ExpPrecision::f32 ? scale : scale * kLog2e) {}

  POSENC_BATCH_INLINE batch operator()(batch d) const {
    if constexpr (precision == ExpPrecision::f32) {
      return softmax_exp<Arch>(d * factor_);
    } else {
      return softmax_exp2<Arch>(d * factor_);
    }
  }

 private:
  batch factor_;
};

}  // namespace posenc::kernels
