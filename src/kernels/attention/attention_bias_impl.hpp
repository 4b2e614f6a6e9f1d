// Positional-bias kernels of the fused attention, templated on the xsimd
// arch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/attention/attention_bias_kernels.hpp"
#include "kernels/attention/mask_add_impl.hpp"
#include "kernels/attention/softcap_impl.hpp"
#include "kernels/batch_inline.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"
#include "kernels/elementwise/running_max_impl.hpp"

namespace posenc::kernels {

template <class Arch>
float sum_of(const float* x, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  batch acc(0.0f);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) acc += batch::load_unaligned(x + j);
  float sum = xsimd::hadd(acc);
  for (; j < n; ++j) sum += x[j];
  return sum;
}

// The columns j < n where clamp(j + shift, lo, hi) is lo: [0, low_end); where
// it is hi: [high_begin, n); the window is read contiguously in between.
struct ClampSegments {
  int64_t low_end, high_begin;
};

template <class Arch>
ClampSegments clamp_segments(int64_t shift, int64_t lo, int64_t hi, int64_t n) {
  const int64_t low_end = std::clamp<int64_t>(lo - shift, 0, n);
  const int64_t high_begin = std::clamp<int64_t>(hi - shift + 1, low_end, n);
  return ClampSegments{low_end, high_begin};
}

// The clamp's values for columns [j, j + count), count <= lanes, of a batch
// across a segment's end: window[lo] below the middle, the middle's values,
// window[hi] above it; 0 past count (where a score of -inf plus an infinite
// bias would be NaN). Built in registers on AVX-512 and AVX2: a batch
// written to memory lane by lane makes its load wait on the stores (the
// generic path does so, for at most two crossing batches and the tail of a
// row).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> clamped_window(const float* window, int64_t shift,
                                                             int64_t lo, int64_t hi,
                                                             const ClampSegments& s, int64_t j,
                                                             int64_t count) {
  using batch = xsimd::batch<float, Arch>;
  // Lanes [0, middle) below the middle, [middle, middle_end) in it; the
  // middle's first value is window[first], addressed only where it is read.
  const int64_t middle = std::clamp<int64_t>(s.low_end - j, 0, count);
  const int64_t middle_end = std::clamp<int64_t>(s.high_begin - j, middle, count);
  const int64_t first = j + middle + shift;
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    const __mmask16 below = lane_mask_avx512<Arch>(middle);
    const __mmask16 below_end = lane_mask_avx512<Arch>(middle_end);
    __m512 v = _mm512_setzero_ps();
    if (middle > 0) v = _mm512_mask_mov_ps(v, below, _mm512_set1_ps(window[lo]));
    if (middle_end > middle) {
      v = _mm512_mask_expandloadu_ps(v, __mmask16(below_end & ~below), window + first);
    }
    if (middle_end < count) {
      const __mmask16 above = __mmask16(lane_mask_avx512<Arch>(count) & ~below_end);
      v = _mm512_mask_mov_ps(v, above, _mm512_set1_ps(window[hi]));
    }
    return v;
  } else
#endif
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const auto lanes_below = [&](int64_t end) {
      return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(end)), lane));
    };
    __m256 v = _mm256_setzero_ps();
    if (middle_end > middle) {  // loaded into the first lanes, moved up to theirs
      const __m256 values =
          _mm256_maskload_ps(window + first, lane_mask_avx2<Arch>(middle_end - middle));
      v = _mm256_permutevar8x32_ps(values, _mm256_sub_epi32(lane, _mm256_set1_epi32(int(middle))));
    }
    if (middle > 0) v = _mm256_blendv_ps(v, _mm256_set1_ps(window[lo]), lanes_below(middle));
    if (middle_end < count) {
      const __m256 above = _mm256_andnot_ps(lanes_below(middle_end), lanes_below(count));
      v = _mm256_blendv_ps(v, _mm256_set1_ps(window[hi]), above);
    }
    return v;
  } else
#endif
  {
    alignas(64) float values[batch::size] = {};
    for (int64_t l = 0; l < middle; ++l) values[l] = window[lo];
    for (int64_t l = middle; l < middle_end; ++l) values[l] = window[first + l - middle];
    for (int64_t l = middle_end; l < count; ++l) values[l] = window[hi];
    return batch::load_aligned(values);
  }
}

// One pass of whole batches over the scores: those within a constant end
// of the window, those within its middle, and one across each segment's
// end (clamped_window). No partial store at a segment's end, which the
// next batch's load (and the softmax's) would wait on.
template <class Arch>
float gather_add(const float* window, int64_t shift, int64_t lo, int64_t hi, float gate,
                 float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  const ClampSegments s = clamp_segments<Arch>(shift, lo, hi, n);
  const batch gates(gate);
  RunningMax<Arch> m;
  int64_t j = 0;
  // The whole batches from j that end by column `end`, biased by bias(column).
  const auto batches_to = [&](int64_t end, const auto& bias) {
    const int64_t count = (end - j) / lanes * lanes;
    if (count <= 0) return;
    add_whole_batches<Arch>(scores + j, count, [&](int64_t t) { return bias(j + t); }, m);
    j += count;
  };
  // The batch at j, across a segment's end, where it is whole.
  const auto across = [&] {
    if (j + lanes > n) return;
    const batch v = batch::load_unaligned(scores + j) +
                    gates * clamped_window<Arch>(window, shift, lo, hi, s, j, lanes);
    v.store_unaligned(scores + j);
    m.see(v);
    j += lanes;
  };
  // window[lo] and window[hi] are only read where the clamp produces them,
  // and the window's middle only addressed where it is read (a far shift
  // would point far outside it).
  if (s.low_end > 0) {
    const batch low_value(gate * window[lo]);
    batches_to(s.low_end, [&](int64_t) { return low_value; });
    if (j < s.low_end) across();
  }
  batches_to(s.high_begin,
             [&](int64_t c) { return gates * batch::load_unaligned(window + shift + c); });
  if (j < s.high_begin) across();
  if (s.high_begin < n) {
    const batch high_value(gate * window[hi]);
    batches_to(n, [&](int64_t) { return high_value; });
  }
  if (j < n) {  // lanes past n: -inf, which no max takes (but for a gate
                // of inf or NaN, which makes them NaN: then lane by lane)
    const batch v = load_partial<Arch>(scores + j, n - j, -std::numeric_limits<float>::infinity()) +
                    gates * clamped_window<Arch>(window, shift, lo, hi, s, j, n - j);
    store_partial<Arch>(v, scores + j, n - j);
    if (std::isfinite(gate)) {
      m.see(v);
    } else {
      for (; j < n; ++j) m.see(scores[j]);
    }
  }
  return m.value();
}

template <class Arch>
void scatter_add(const float* p, int64_t shift, int64_t lo, int64_t hi, float* weights, int64_t n) {
  const ClampSegments s = clamp_segments<Arch>(shift, lo, hi, n);
  if (s.low_end > 0) weights[lo] += sum_of<Arch>(p, s.low_end);
  float* middle = weights + s.low_end + shift;
  add_f32<Arch>(middle, p + s.low_end, middle, s.high_begin - s.low_end);
  if (s.high_begin < n) weights[hi] += sum_of<Arch>(p + s.high_begin, n - s.high_begin);
}

// Map rows narrower than a batch (below 8 on AVX2, below 4 on SSE2 and NEON;
// on AVX-512 where the keys span more than 16 map rows): chunks of
// the row's bias are written to a buffer, one batch per map row, each
// overwriting the lanes the previous one wrote past its map row's end, then
// added to the scores in whole batches; returns the largest new score. (The
// loads wait for those stores: AVX-512 mostly takes add_2d_permuted below.)
template <class Arch>
float add_2d_narrow(const float* row_logits, const float* col_logits, int64_t width,
                    int64_t first_key, float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  constexpr int64_t chunk = 16 * lanes;
  const batch cols = load_partial<Arch>(col_logits, width, 0.0f);
  alignas(64) float buffer[lanes + chunk + lanes];
  float* bias = buffer + lanes;  // bias[-lanes, chunk + lanes) may be written
  RunningMax<Arch> m;
  for (int64_t j0 = 0; j0 < n; j0 += chunk) {
    const int64_t count = std::min(chunk, n - j0);
    const int64_t key = first_key + j0;
    int64_t x = key / width;
    for (int64_t at = -(key % width); at < count; at += width, ++x) {
      (cols + batch(row_logits[x])).store_unaligned(bias + at);
    }
    float* s = scores + j0;
    const int64_t t = add_whole_batches<Arch>(
        s, count, [&](int64_t c) { return batch::load_unaligned(bias + c); }, m);
    if (t < count) {  // lanes past count: -inf, which no max takes
      const int64_t rest = count - t;
      const batch sum = load_partial<Arch>(s + t, rest, -std::numeric_limits<float>::infinity()) +
                        load_partial<Arch>(bias + t, rest, 0.0f);
      store_partial<Arch>(sum, s + t, rest);
      m.see(sum);
    }
  }
  return m.value();
}

#if XSIMD_WITH_AVX512F
// add_2d_narrow on AVX-512 when the keys span at most 16 map rows (a 14 x 14
// map): the row and column logits sit in one register each, and every batch
// takes its lanes' logits from them by two permutes. Lane l holds the map
// row and column of key first_key + t + l; a step of one batch adds
// lanes / width rows and lanes % width columns, carrying a row where the
// column passes the width.
template <class Arch>
float add_2d_permuted(const float* row_logits, const float* col_logits, int64_t width,
                      int64_t first_key, int64_t map_rows, float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  using ibatch = xsimd::batch<int32_t, Arch>;
  constexpr int64_t lanes = batch::size;
  const batch rows = load_partial<Arch>(row_logits + first_key / width, map_rows, 0.0f);
  const batch cols = load_partial<Arch>(col_logits, width, 0.0f);
  const auto w = ibatch(int32_t(width)), one = ibatch(1);
  const auto row_step = ibatch(int32_t(lanes / width)), col_step = ibatch(int32_t(lanes % width));
  ibatch col = ibatch(int32_t(first_key % width)) +
               ibatch(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  ibatch row(0);
  for (auto past = col >= w; xsimd::any(past); past = col >= w) {
    col = xsimd::select(past, col - w, col);
    row = xsimd::select(past, row + one, row);
  }
  const auto advance = [&] {
    col += col_step;
    row += row_step;
    const auto carry = col >= w;
    col = xsimd::select(carry, col - w, col);
    row = xsimd::select(carry, row + one, row);
  };
  RunningMax<Arch> m;
  int64_t t = 0;
  for (; t + lanes <= n; t += lanes) {
    const batch bias =
        batch(_mm512_permutexvar_ps(row, rows)) + batch(_mm512_permutexvar_ps(col, cols));
    const batch sum = batch::load_unaligned(scores + t) + bias;
    sum.store_unaligned(scores + t);
    m.see(sum);
    advance();
  }
  if (t < n) {  // lanes past n: a bias of 0 and a score of -inf, which no max takes
    const __mmask16 valid = lane_mask_avx512<Arch>(n - t);
    const batch bias = _mm512_add_ps(_mm512_maskz_permutexvar_ps(valid, row, rows),
                                     _mm512_maskz_permutexvar_ps(valid, col, cols));
    const batch sum =
        load_partial<Arch>(scores + t, n - t, -std::numeric_limits<float>::infinity()) + bias;
    store_partial<Arch>(sum, scores + t, n - t);
    m.see(sum);
  }
  return m.value();
}
#endif

// Map rows of at least a batch: whole batches of each map row, then its
// tail one by one (a masked batch costs more on AVX2 and SSE2), the max
// tracked throughout (in two running maxima: with the row in L1, one chain
// of maxima bound the pass). Every path adds a score and the sum of its row
// and column logits.
template <class Arch>
float add_2d(const float* row_logits, const float* col_logits, int64_t width, int64_t first_key,
             float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  if (width < lanes) {
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
      const int64_t map_rows = (first_key % width + n + width - 1) / width;
      if (map_rows <= lanes) {
        return add_2d_permuted<Arch>(row_logits, col_logits, width, first_key, map_rows, scores,
                                     n);
      }
    }
#endif
    return add_2d_narrow<Arch>(row_logits, col_logits, width, first_key, scores, n);
  }
  RunningMax<Arch> m;
  int64_t x = first_key / width, y = first_key % width;
  for (int64_t j = 0; j < n; ++x, y = 0) {
    const int64_t count = std::min(width - y, n - j);
    const batch row(row_logits[x]);
    float* s = scores + j;
    const float* c = col_logits + y;
    const auto bias = [&](int64_t t) { return batch::load_unaligned(c + t) + row; };
    for (int64_t t = add_whole_batches<Arch>(s, count, bias, m); t < count; ++t) {
      s[t] += c[t] + row_logits[x];
      m.see(s[t]);
    }
    j += count;
  }
  return m.value();
}

// Whole batches by two gathers each; the tail's lanes in memory.
template <class Arch>
float add_pair_columns(const float* query_logits, const float* key_logits, int64_t ld,
                       const int32_t* columns, float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  using indices = xsimd::batch<int32_t, Arch>;
  constexpr int64_t lanes = batch::size;
  static_assert(indices::size == lanes);
  alignas(64) int32_t lane_rows[lanes];
  for (int64_t l = 0; l < lanes; ++l) lane_rows[l] = int32_t(l * ld);
  const indices lane_offsets = indices::load_aligned(lane_rows);
  RunningMax<Arch> m;
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const indices c = indices::load_unaligned(columns + j);
    const batch v = batch::load_unaligned(scores + j) + batch::gather(query_logits, c) +
                    batch::gather(key_logits + j * ld, c + lane_offsets);
    v.store_unaligned(scores + j);
    m.see(v);
  }
  if (j < n) {  // lanes past n: -inf, which no max takes
    alignas(64) float from_query[lanes] = {};
    alignas(64) float from_key[lanes] = {};
    for (int64_t l = 0; l < n - j; ++l) {
      from_query[l] = query_logits[columns[j + l]];
      from_key[l] = key_logits[(j + l) * ld + columns[j + l]];
    }
    const batch v = load_partial<Arch>(scores + j, n - j, -std::numeric_limits<float>::infinity()) +
                    batch::load_aligned(from_query) + batch::load_aligned(from_key);
    store_partial<Arch>(v, scores + j, n - j);
    m.see(v);
  }
  return m.value();
}

template <class Arch>
constexpr AttentionBiasKernels make_attention_bias_kernels() {
  return AttentionBiasKernels{&gather_add<Arch>, &scatter_add<Arch>, &add_2d<Arch>,
                              &add_pair_columns<Arch>, &max_of<Arch>, &add_mask<Arch, float>,
                              &add_mask<Arch, uint16_t>, &softcap<Arch>};
}

}  // namespace posenc::kernels
