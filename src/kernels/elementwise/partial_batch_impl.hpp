// Loads and stores of the first `count` lanes of a batch (count < lanes), for
// the tails of rows, templated on the xsimd arch: masked instructions on
// AVX-512 and AVX2 (which never touch the lanes masked off; AVX2 masks 32-bit
// lanes, so an odd last bf16 value moves by itself), elsewhere a copy
// through a small buffer by a loop of constant bound (copying `count`
// elements called memmove, around which GCC kept the callers' sums in
// memory).
#pragma once

#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/batch_inline.hpp"
#include "kernels/elementwise/bf16_impl.hpp"

namespace posenc::kernels {

#if XSIMD_WITH_AVX512F
// The lanes below count (<= 16) of a 16-lane batch.
template <class Arch>
__mmask16 lane_mask_avx512(int64_t count) {
  return __mmask16((1u << count) - 1);
}
#endif

#if XSIMD_WITH_AVX2
// All ones in the lanes below count, for AVX2's masked loads and stores.
template <class Arch>
__m256i lane_mask_avx2(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

// x[0, count) in the first lanes, `fill` in the others.
template <class Arch>
xsimd::batch<float, Arch> load_partial(const float* x, int64_t count, float fill) {
  using batch = xsimd::batch<float, Arch>;
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), lane_mask_avx512<Arch>(count), x);
  } else
#endif
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    const __m256i mask = lane_mask_avx2<Arch>(count);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(x, mask),
                            _mm256_castsi256_ps(mask));
  } else
#endif
  {
    alignas(64) float lanes[batch::size];
    for (size_t i = 0; i < batch::size; ++i) lanes[i] = int64_t(i) < count ? x[i] : fill;
    return batch::load_aligned(lanes);
  }
}

// x[0, count) of fp32 or bf16 values as floats in the first lanes, 0 in the
// others.
template <class Arch>
xsimd::batch<float, Arch> load_floats_partial(const float* x, int64_t count) {
  return load_partial<Arch>(x, count, 0.0f);
}
template <class Arch>
xsimd::batch<float, Arch> load_floats_partial(const uint16_t* x, int64_t count) {
#if XSIMD_WITH_AVX512BW && defined(__AVX512VL__)
  if constexpr (std::is_base_of_v<xsimd::avx512bw, Arch>) {
    const __m256i bits = _mm256_maskz_loadu_epi16(lane_mask_avx512<Arch>(count), x);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  } else
#endif
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    // AVX2 masks 32-bit lanes: the whole pairs of values, then an odd last
    // value into the next pair's lane, as that pair's first.
    const __m128i pair_index = _mm_setr_epi32(0, 1, 2, 3);
    const __m128i pairs = _mm_set1_epi32(int(count / 2));
    __m128i bits = _mm_maskload_epi32(reinterpret_cast<const int*>(x),
                                      _mm_cmpgt_epi32(pairs, pair_index));
    if (count % 2 == 1) {
      bits = _mm_blendv_epi8(bits, _mm_set1_epi32(x[count - 1]),
                             _mm_cmpeq_epi32(pairs, pair_index));
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  } else
#endif
  {
    constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
    uint16_t values[lanes];
    for (int64_t i = 0; i < lanes; ++i) values[i] = i < count ? x[i] : uint16_t(0);
    return load_bf16<Arch>(values);
  }
}

// out[0, count) = the first lanes of v.
template <class Arch>
void store_partial(xsimd::batch<float, Arch> v, float* out, int64_t count) {
  using batch = xsimd::batch<float, Arch>;
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    _mm512_mask_storeu_ps(out, lane_mask_avx512<Arch>(count), v);
  } else
#endif
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    _mm256_maskstore_ps(out, lane_mask_avx2<Arch>(count), v);
  } else
#endif
  {
    alignas(64) float lanes[batch::size];
    v.store_aligned(lanes);
    for (size_t i = 0; i < batch::size; ++i) {
      if (int64_t(i) < count) out[i] = lanes[i];
    }
  }
}

// out[0, count) = the upper 16 bits of the first lanes of `high` (bf16
// bits rounded there, as for store_high_halves).
template <class Arch>
void store_high_halves_partial(xsimd::batch<uint32_t, Arch> high, uint16_t* out,
                               int64_t count) {
#if XSIMD_WITH_AVX512BW && defined(__AVX512VL__)
  if constexpr (std::is_base_of_v<xsimd::avx512bw, Arch>) {
    _mm256_mask_storeu_epi16(out, lane_mask_avx512<Arch>(count),
                             _mm512_cvtepi32_epi16(_mm512_srli_epi32(high, 16)));
  } else
#endif
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    // As load_floats_partial: the whole pairs by a masked 32-bit store, then
    // an odd last value.
    alignas(16) uint16_t values[8];
    store_high_halves<Arch>(high, values);
    const __m128i pair_index = _mm_setr_epi32(0, 1, 2, 3);
    _mm_maskstore_epi32(reinterpret_cast<int*>(out),
                        _mm_cmpgt_epi32(_mm_set1_epi32(int(count / 2)), pair_index),
                        _mm_load_si128(reinterpret_cast<const __m128i*>(values)));
    if (count % 2 == 1) out[count - 1] = values[count - 1];
  } else
#endif
  {
    constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
    uint16_t values[lanes];
    store_high_halves<Arch>(high, values);
    for (int64_t i = 0; i < lanes; ++i) {
      if (i < count) out[i] = values[i];
    }
  }
}

// out[0, count) = the first lanes of v, as fp32 or rounded to bf16.
template <class Arch>
void store_floats_partial(xsimd::batch<float, Arch> v, float* out, int64_t count) {
  store_partial<Arch>(v, out, count);
}
template <class Arch>
void store_floats_partial(xsimd::batch<float, Arch> v, uint16_t* out, int64_t count) {
  store_high_halves_partial<Arch>(bf16_high_bits<Arch>(v), out, count);
}

// A batch of values at p as floats, or with kPartial its first count lanes
// (the others 0); and back: a kernel's whole and tail steps as one template.
template <class Arch, bool kPartial, class T>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> load_values(const T* p, int64_t count) {
  if constexpr (kPartial) {
    return load_floats_partial<Arch>(p, count);
  } else {
    return load_floats<Arch>(p);
  }
}
template <class Arch, bool kPartial, class T>
POSENC_BATCH_INLINE void store_values(xsimd::batch<float, Arch> v, T* p, int64_t count) {
  if constexpr (kPartial) {
    store_floats_partial<Arch>(v, p, count);
  } else {
    store_floats<Arch>(v, p);
  }
}

}  // namespace posenc::kernels
