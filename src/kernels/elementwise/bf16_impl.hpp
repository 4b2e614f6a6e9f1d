// bf16 <-> fp32 for one batch, templated on the xsimd arch. bf16 is the upper
// half of an fp32: widening shifts the 16 bits up; narrowing rounds to nearest
// even (as posenc_f32_to_bf16) in the upper half, then keeps that half.
// xsimd 8.1 cannot convert between 16- and 32-bit lanes, so each ISA family
// has its own widen/narrow overload, chosen by tag dispatch on the arch (the
// most derived of sse2, avx2, avx512bw and neon that Arch derives from) and
// compiled only where its ISA is enabled.
#pragma once

#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "kernels/batch_inline.hpp"

namespace posenc::kernels {

// The bf16 of each float in the upper 16 bits of its lane (the lower 16 bits
// are left over), rounded to nearest even, for floats that are not NaN (a
// NaN's payload could carry into its sign).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<uint32_t, Arch> bf16_high_bits_of_non_nan(
    xsimd::batch<float, Arch> x) {
  using ubatch = xsimd::batch<uint32_t, Arch>;
  const ubatch bits = xsimd::bitwise_cast<ubatch>(x);
  // Adding 0x7FFF plus the lowest kept bit carries into the upper half exactly
  // when the dropped half is above the tie, or at the tie with an odd kept
  // half. No finite or infinite float carries out of 32 bits.
  return bits + ubatch(0x7FFFu) + ((bits >> 16) & ubatch(1u));
}

// As bf16_high_bits_of_non_nan, and a NaN keeps its sign and top mantissa
// bits, with the quiet bit set.
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<uint32_t, Arch> bf16_high_bits(xsimd::batch<float, Arch> x) {
  using fbatch = xsimd::batch<float, Arch>;
  using ubatch = xsimd::batch<uint32_t, Arch>;
  const ubatch rounded = bf16_high_bits_of_non_nan<Arch>(x);
  const ubatch quiet_nan = xsimd::bitwise_cast<ubatch>(x) | ubatch(0x00400000u);
  // xsimd::isnan, not x != x: xsimd 8.1's AVX and AVX-512 != is an ordered
  // compare, false for NaNs.
  return xsimd::bitwise_cast<ubatch>(xsimd::select(xsimd::isnan(x),
                                                   xsimd::bitwise_cast<fbatch>(quiet_nan),
                                                   xsimd::bitwise_cast<fbatch>(rounded)));
}

namespace bf16_detail {

// widen: batch::size bf16 values at p as floats (exact).
// narrow: the upper halves of `high` to batch::size bf16 values at p.

#if XSIMD_WITH_SSE2
template <class Arch>
xsimd::batch<float, Arch> widen(const uint16_t* p, xsimd::kernel::requires_arch<xsimd::sse2>) {
  const __m128i values = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), values));
}

// SSE2 packs with signed saturation only: an arithmetic shift turns each upper
// half into its sign-extended 16-bit value, which packs keeps unchanged.
template <class Arch>
void narrow(xsimd::batch<uint32_t, Arch> high, uint16_t* p,
            xsimd::kernel::requires_arch<xsimd::sse2>) {
  const __m128i halves = _mm_srai_epi32(high, 16);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(halves, halves));
}
#endif

#if XSIMD_WITH_AVX2
template <class Arch>
xsimd::batch<float, Arch> widen(const uint16_t* p, xsimd::kernel::requires_arch<xsimd::avx2>) {
  const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(values), 16));
}

// Packs the two 128-bit halves against each other (packs works within
// 128-bit lanes), with the sign extension of the SSE2 narrow.
template <class Arch>
void narrow(xsimd::batch<uint32_t, Arch> high, uint16_t* p,
            xsimd::kernel::requires_arch<xsimd::avx2>) {
  const __m256i halves = _mm256_srai_epi32(high, 16);
  const __m128i packed =
      _mm_packs_epi32(_mm256_castsi256_si128(halves), _mm256_extracti128_si256(halves, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
}
#endif

#if XSIMD_WITH_AVX512BW
template <class Arch>
xsimd::batch<float, Arch> widen(const uint16_t* p,
                                xsimd::kernel::requires_arch<xsimd::avx512bw>) {
  const __m256i values = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(values), 16));
}

template <class Arch>
void narrow(xsimd::batch<uint32_t, Arch> high, uint16_t* p,
            xsimd::kernel::requires_arch<xsimd::avx512bw>) {
  const __m256i packed = _mm512_cvtepi32_epi16(_mm512_srli_epi32(high, 16));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
}
#endif

#if XSIMD_WITH_NEON
template <class Arch>
xsimd::batch<float, Arch> widen(const uint16_t* p, xsimd::kernel::requires_arch<xsimd::neon>) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

template <class Arch>
void narrow(xsimd::batch<uint32_t, Arch> high, uint16_t* p,
            xsimd::kernel::requires_arch<xsimd::neon>) {
  vst1_u16(p, vshrn_n_u32(high, 16));
}
#endif

}  // namespace bf16_detail

// batch::size bf16 values at p (any alignment), widened exactly to floats.
template <class Arch>
xsimd::batch<float, Arch> load_bf16(const uint16_t* p) {
  return bf16_detail::widen<Arch>(p, Arch{});
}

// The upper 16 bits of each lane of `high` (bf16 bits rounded there) to
// batch::size values at p (any alignment).
template <class Arch>
void store_high_halves(xsimd::batch<uint32_t, Arch> high, uint16_t* p) {
  bf16_detail::narrow<Arch>(high, p, Arch{});
}

// The floats of v rounded to bf16 (as posenc_f32_to_bf16), to batch::size
// values at p (any alignment).
template <class Arch>
POSENC_BATCH_INLINE void store_rounded_bf16(xsimd::batch<float, Arch> v, uint16_t* p) {
  store_high_halves<Arch>(bf16_high_bits<Arch>(v), p);
}

// One batch of fp32 or bf16 values (any alignment) as floats (bf16 widened
// exactly), and back (bf16 rounded to nearest even).
template <class Arch>
xsimd::batch<float, Arch> load_floats(const float* p) {
  return xsimd::batch<float, Arch>::load_unaligned(p);
}

template <class Arch>
xsimd::batch<float, Arch> load_floats(const uint16_t* p) {
  return load_bf16<Arch>(p);
}

template <class Arch>
void store_floats(xsimd::batch<float, Arch> v, float* p) {
  v.store_unaligned(p);
}

template <class Arch>
POSENC_BATCH_INLINE void store_floats(xsimd::batch<float, Arch> v, uint16_t* p) {
  store_rounded_bf16<Arch>(v, p);
}

}  // namespace posenc::kernels
