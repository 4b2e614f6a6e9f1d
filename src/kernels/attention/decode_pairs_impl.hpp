// The decode products of bf16 attention with AVX512-BF16's pair dot product
// (compiled only in src/arch/avx512_bf16.cpp): one vdpbf16ps multiplies 32
// bf16 by 32 bf16 and adds each lane's pair of products to an fp32
// accumulator, with no widening of the bf16 operands. A product of two bf16
// is exact in fp32, so the sums round as FMAs do, a product at a time, but
// for subnormals (below 1.2e-38): the instruction reads them as zeros and
// flushes subnormal results to zero.
#pragma once

#if defined(__AVX512BF16__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/attention/decode_products_impl.hpp"

namespace posenc::kernels {

// bf16 in a 512-bit register, 16 pairs.
constexpr int64_t kBf16PerLoad = 32;

// The mask of the first min(count, 32) of 32 bf16 lanes (count >= 0).
inline __mmask32 bf16_lane_mask(int64_t count) {
  return _cvtu32_mask32(count >= kBf16PerLoad ? ~uint32_t(0) : (uint32_t(1) << count) - 1);
}

// decode_scores' Products for bf16 rows and keys: a pair of products per
// lane, dim in steps of 32 (the tail by masked loads, which read no memory
// past dim).
struct Bf16PairProducts {
  template <int64_t kRows, int64_t kKeys>
  static void accumulate(const uint16_t* const* query, const uint16_t* const* key, int64_t dim,
                         xsimd::batch<float, xsimd::avx512bw>* sums) {
    // Whole steps, then the tail's masked step, each written out: with a
    // lambda for the step GCC kept the sums in memory in some builds (B1 H32
    // kv8 Tq1 Tk512 d128 bf16 1.4x slower on a Zen 4), and one loop that
    // masks every step ran warm steps 5% slower.
    const int64_t whole = dim - dim % kBf16PerLoad;
    for (int64_t c = 0; c < whole; c += kBf16PerLoad) {
      __m512bh qc[kRows];
      for (int64_t r = 0; r < kRows; ++r) {
        qc[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(query[r] + c));
      }
      for (int64_t i = 0; i < kKeys; ++i) {
        const __m512bh kc = reinterpret_cast<__m512bh>(_mm512_loadu_si512(key[i] + c));
        for (int64_t r = 0; r < kRows; ++r) {
          sums[r * kKeys + i] = _mm512_dpbf16_ps(sums[r * kKeys + i], qc[r], kc);
        }
      }
    }
    if (whole < dim) {
      const __mmask32 lanes = bf16_lane_mask(dim - whole);
      __m512bh qc[kRows];
      for (int64_t r = 0; r < kRows; ++r) {
        qc[r] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(lanes, query[r] + whole));
      }
      for (int64_t i = 0; i < kKeys; ++i) {
        const __m512bh kc =
            reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(lanes, key[i] + whole));
        for (int64_t r = 0; r < kRows; ++r) {
          sums[r * kKeys + i] = _mm512_dpbf16_ps(sums[r * kKeys + i], qc[r], kc);
        }
      }
    }
  }
};

// decode_values' Values for bf16 values, with the probabilities rounded to
// bf16 (as the GEMMs of bf16 attention take them): keys in pairs (j, j + 1),
// whose rows interleaved by unpacklo/hi_epi16 hold, in each 128-bit block b
// of 8 columns, columns 8 b + [0, 4) (lo) and 8 b + [4, 8) (hi) as pairs,
// each dot with the broadcast pair (p_j, p_j+1) of a row. An odd last key
// pairs with a zero row and probability.
struct Bf16PairValues {
  static constexpr int kGroups = 2;  // column groups of 32 per tile
  static constexpr int64_t kTile = kBf16PerLoad * kGroups;
  static_assert(kDecodeChunkKeys % kBf16PerLoad == 0, "whole blocks of probabilities per chunk");

  // The columns of a tile, for any rows (decode_values).
  static constexpr int64_t widest_tile(int64_t) { return kTile; }

  // keys <= kDecodeChunkKeys (decode_values' chunk).
  template <int kRows>
  static void rows(const float* probs, int64_t ld_probs, const uint16_t* v, int64_t ldv,
                   int64_t keys, int64_t dim, float* acc, int64_t ld_acc,
                   const NextRows<uint16_t>& next) {
    // Row r's probabilities as bf16 pairs (an odd last key's pair ends in
    // a zero).
    int32_t pairs[kRows][kDecodeChunkKeys / 2];
    for (int r = 0; r < kRows; ++r) {
      for (int64_t j = 0; j < keys; j += kBf16PerLoad) {
        const float* p = probs + r * ld_probs + j;
        const __mmask32 lanes = bf16_lane_mask(keys - j);
        const __m512 low = _mm512_maskz_loadu_ps(__mmask16(lanes), p);
        const __m512 high = keys - j > 16 ? _mm512_maskz_loadu_ps(__mmask16(lanes >> 16), p + 16)
                                          : _mm512_setzero_ps();
        _mm512_storeu_si512(&pairs[r][j / 2],
                            reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low)));
      }
    }
    // One tile (dim <= 64) reads whole rows, which the hardware follows.
    const NextRows<uint16_t> ask = dim > kTile ? next : NextRows<uint16_t>{};
    for (int64_t c0 = 0; c0 < dim; c0 += kTile) {
      tile<kRows>(pairs, v, ldv, keys, c0, dim, acc, ld_acc, ask);
    }
  }

 private:
  // Columns [c0, c0 + kTile) within dim of acc's rows [0, kRows); the first
  // tile asks for the next chunk's rows.
  template <int kRows>
  static void tile(const int32_t (*pairs)[kDecodeChunkKeys / 2], const uint16_t* v, int64_t ldv,
                   int64_t keys, int64_t c0, int64_t dim, float* acc, int64_t ld_acc,
                   const NextRows<uint16_t>& next) {
    // Each group's columns within dim, and its offset (0 for a group past
    // dim, which reads and writes nothing).
    __mmask32 lanes[kGroups];
    int64_t offset[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      const int64_t columns = std::max<int64_t>(dim - c0 - kBf16PerLoad * g, 0);
      lanes[g] = bf16_lane_mask(columns);
      offset[g] = columns > 0 ? kBf16PerLoad * g : 0;
    }
    __m512 lo[kRows][kGroups], hi[kRows][kGroups];
    for (int r = 0; r < kRows; ++r) {
      for (int g = 0; g < kGroups; ++g) lo[r][g] = hi[r][g] = _mm512_setzero_ps();
    }
    // Keys j and j + 1; an odd last key pairs with a zero row (the second
    // load reads nothing: an empty mask, at the first row's address). One
    // loop body, with no lambda holding the accumulators: GCC kept lo and hi
    // in memory through one, storing all 16 at every pair of keys (4 rows:
    // 5.05 -> 3.83 ms for the step on one Zen 5 core).
    for (int64_t j = 0; j < keys; j += 2) {
      if (c0 == 0) {
        next.prefetch(j);
        next.prefetch(j + 1);
      }
      const uint16_t* first = v + j * ldv + c0;
      const bool pair = j + 1 < keys;
      const uint16_t* second = pair ? first + ldv : first;
      __m512bh vlo[kGroups], vhi[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        const __m512i a = _mm512_maskz_loadu_epi16(lanes[g], first + offset[g]);
        const __m512i b =
            _mm512_maskz_loadu_epi16(pair ? lanes[g] : __mmask32(0), second + offset[g]);
        vlo[g] = reinterpret_cast<__m512bh>(_mm512_unpacklo_epi16(a, b));
        vhi[g] = reinterpret_cast<__m512bh>(_mm512_unpackhi_epi16(a, b));
      }
      for (int r = 0; r < kRows; ++r) {
        const __m512bh p = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pairs[r][j / 2]));
        for (int g = 0; g < kGroups; ++g) {
          lo[r][g] = _mm512_dpbf16_ps(lo[r][g], vlo[g], p);
          hi[r][g] = _mm512_dpbf16_ps(hi[r][g], vhi[g], p);
        }
      }
    }
    // Columns in order: blocks of 4 from lo and hi in turn.
    const __m512i first_16 =
        _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i last_16 =
        _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    for (int r = 0; r < kRows; ++r) {
      for (int g = 0; g < kGroups; ++g) {
        float* out = acc + r * ld_acc + c0 + offset[g];
        const __mmask16 low_lanes = __mmask16(lanes[g]), high_lanes = __mmask16(lanes[g] >> 16);
        const __m512 low = _mm512_permutex2var_ps(lo[r][g], first_16, hi[r][g]);
        _mm512_mask_storeu_ps(out, low_lanes,
                              _mm512_add_ps(_mm512_maskz_loadu_ps(low_lanes, out), low));
        if (high_lanes != 0) {  // (else out + 16 may lie past the row's end)
          const __m512 high = _mm512_permutex2var_ps(lo[r][g], last_16, hi[r][g]);
          _mm512_mask_storeu_ps(out + 16, high_lanes,
                                _mm512_add_ps(_mm512_maskz_loadu_ps(high_lanes, out + 16), high));
        }
      }
    }
  }
};

}  // namespace posenc::kernels

#endif
