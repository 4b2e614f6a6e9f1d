// The two products of the fused attention for a few query rows (decoding)
// or a small problem (a window of a few dozen tokens), templated on the xsimd
// arch: scores = alpha q k^T and acc (+)= p v, with the keys and values read
// as stored. A GEMM library relayouts (packs) its B operand for every call
// and has a fixed cost per call; with a few rows each key is used a few
// times only, and a small problem's products take a few microseconds, so
// that those cost more than the products; these read each key and value
// once per call instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/attention/transpose_impl.hpp"
#include "kernels/elementwise/bf16_impl.hpp"
#include "kernels/elementwise/fused_multiply_add_impl.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/prefetch.hpp"

namespace posenc::kernels {

// Software prefetch of the keys and values a decode product reads next
// (runtime/prefetch.hpp): a decode step is bound by reading them once, and
// the hardware prefetchers alone let a core read them at a fraction of its
// bandwidth where a value tile reads part of each row, or a key tile few
// keys (several query rows per key). A step of 4 query rows per grouped kv
// head in bf16 on AVX512-BF16 (B1 H32 kv8 kv8192 d128, one Zen 5 core):
// 3.8 -> 0.9 ms, after the pair kernel kept its sums in registers (5.05 ->
// 3.83 ms). Keys, and values read in one or two column tiles, are asked
// into L2 (decode_scores_rows, decode_values).

// Rows [first, end) of a matrix (row_bytes each, ld elements apart), into
// `level`.
template <class T>
void prefetch_rows(CacheLevel level, const T* matrix, int64_t ld, int64_t first, int64_t end,
                   int64_t row_bytes) {
  for (int64_t j = first; j < end; ++j) prefetch_bytes(matrix + j * ld, row_bytes, level);
}

// The value rows of the next chunk, asked for one per key into `level`
// while a chunk's first column tile reads its own: count rows of
// row_bytes, ld elements apart, from rows (count 0, as value-initialized:
// none).
template <class T>
struct NextRows {
  const T* rows = nullptr;
  int64_t ld = 0, count = 0, row_bytes = 0;
  CacheLevel level = CacheLevel::l1;

  // Row j of the next chunk, if it has one.
  void prefetch(int64_t j) const {
    if (j < count) prefetch_bytes(rows + j * ld, row_bytes, level);
  }
};

// sums + a[c] b[c] over the dim's tail [whole, dim), lane by lane, each
// lane's product added in one rounding as the whole batches' are.
template <class Arch, class T>
xsimd::batch<float, Arch> add_tail_products(const T* a, const T* b, int64_t whole, int64_t dim,
                                            xsimd::batch<float, Arch> sums) {
  return fused_multiply_add<Arch>(load_floats_partial<Arch>(a + whole, dim - whole),
                                  load_floats_partial<Arch>(b + whole, dim - whole), sums);
}

// Lane i = the sum of the lanes of rows[i], i < lanes. xsimd 8.1's haddp
// does that except on AVX-512, where it permutes the lanes of its result.
template <class Arch>
inline xsimd::batch<float, Arch> sum_each(const xsimd::batch<float, Arch>* rows) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    // Fold each pair of rows' 256-bit halves, then 128-bit quarters (each
    // 128-bit block then holds 4 partial sums of one row: row 4 k + block
    // in u[k]), then haddp within 128-bit blocks (position 4 block + lane
    // holds row 4 lane + block), and put each row's sum at its index.
    __m512 halves[8];
    for (int i = 0; i < 8; ++i) {
      halves[i] = _mm512_add_ps(
          _mm512_shuffle_f32x4(rows[2 * i], rows[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
          _mm512_shuffle_f32x4(rows[2 * i], rows[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    __m512 u[4];
    for (int k = 0; k < 4; ++k) {
      u[k] = _mm512_add_ps(
          _mm512_shuffle_f32x4(halves[2 * k], halves[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
          _mm512_shuffle_f32x4(halves[2 * k], halves[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    const __m512 a = _mm512_add_ps(_mm512_unpacklo_ps(u[0], u[1]), _mm512_unpackhi_ps(u[0], u[1]));
    const __m512 b = _mm512_add_ps(_mm512_unpacklo_ps(u[2], u[3]), _mm512_unpackhi_ps(u[2], u[3]));
    const __m512 sums = _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                      _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512i row_of = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(row_of, sums);
  } else
#endif
  {
    return xsimd::haddp(rows);
  }
}

// The products of a tile of kRows query rows by kKeys keys, accumulated lane
// by lane: sums[r * kKeys + i] += the products of query[r] and key[i] over a
// slice of dim per lane (their sum over lanes is the dot product). Each key
// batch is loaded (widened from bf16) once for all the rows, each q batch
// once for all the keys.
template <class Arch, class T>
struct WidenedProducts {
  template <int64_t kRows, int64_t kKeys>
  static void accumulate(const T* const* query, const T* const* key, int64_t dim,
                         xsimd::batch<float, Arch>* sums) {
    using batch = xsimd::batch<float, Arch>;
    constexpr int64_t lanes = batch::size;
    const int64_t whole = dim - dim % lanes;
    for (int64_t c = 0; c < whole; c += lanes) {
      batch qc[kRows];
      for (int64_t r = 0; r < kRows; ++r) qc[r] = load_floats<Arch>(query[r] + c);
      for (int64_t i = 0; i < kKeys; ++i) {
        const batch kc = load_floats<Arch>(key[i] + c);
        for (int64_t r = 0; r < kRows; ++r) {
          sums[r * kKeys + i] = fused_multiply_add<Arch>(qc[r], kc, sums[r * kKeys + i]);
        }
      }
    }
    if (whole < dim) {
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t i = 0; i < kKeys; ++i) {
          sums[r * kKeys + i] =
              add_tail_products<Arch>(query[r], key[i], whole, dim, sums[r * kKeys + i]);
        }
      }
    }
  }
};

// Rows [0, kRows) of decode_scores (q's rows past `rows` repeat its last,
// not stored). A tile of kRows rows by lanes / kRows keys holds one batch per
// (row, key), Products' lane sums, which sum_each folds into one batch of
// the tile's scores, row after row.
template <class Arch, class T, int64_t kRows, class Products>
void decode_scores_rows(const T* q, int64_t ldq, int64_t rows, const T* k, int64_t ldk,
                        int64_t keys, int64_t dim, float alpha, float* scores, int64_t ld_scores) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  constexpr int64_t kKeys = lanes / kRows;
  const T* query[kRows];
  for (int64_t r = 0; r < kRows; ++r) query[r] = q + std::min(r, rows - 1) * ldq;
  // The keys kAhead on, asked for into L2 with several rows (one Zen 4
  // core, fp32 B1 H32 kv8 Tq1 d128 against 65536 keys: the scores 65 to
  // 21-22 us a block of 1024 keys, bf16 18-20 to 14; asked into L1, the
  // lines waited on its few miss buffers). One row's tiles are not asked
  // for: with the asking loop there GCC 12 kept their 16 sums in memory, a
  // warm step 1.3x slower.
  constexpr int64_t kAhead = 16;
  const int64_t row_bytes = dim * int64_t(sizeof(T));
  if constexpr (kRows > 1) {
    prefetch_rows(CacheLevel::l2, k, ldk, 0, std::min(kAhead, keys), row_bytes);
  }
  for (int64_t j0 = 0; j0 < keys; j0 += kKeys) {
    if constexpr (kRows > 1) {
      prefetch_rows(CacheLevel::l2, k, ldk, std::min(j0 + kAhead, keys),
                    std::min(j0 + kAhead + kKeys, keys), row_bytes);
    }
    // A tile short of keys repeats its first key (not stored), so that
    // every tile runs the same unrolled loops.
    const int64_t count = std::min(kKeys, keys - j0);
    const T* key[kKeys];
    for (int64_t i = 0; i < kKeys; ++i) key[i] = k + (j0 + (i < count ? i : 0)) * ldk;
    batch sums[lanes];  // (row r, key i) at r * kKeys + i
    for (int64_t l = 0; l < lanes; ++l) sums[l] = batch(0.0f);
    Products::template accumulate<kRows, kKeys>(query, key, dim, sums);
    alignas(64) float tile[lanes];
    (sum_each<Arch>(sums) * batch(alpha)).store_aligned(tile);
    for (int64_t r = 0; r < std::min(kRows, rows); ++r) {
      float* out = scores + r * ld_scores + j0;
      if (count == kKeys) {  // a constant count: one vector copy, not a call
        for (int64_t i = 0; i < kKeys; ++i) out[i] = tile[r * kKeys + i];
      } else {
        for (int64_t i = 0; i < count; ++i) out[i] = tile[r * kKeys + i];
      }
    }
  }
}

// Vector registers of the arch: 32 on AVX-512 and NEON, 16 elsewhere.
template <class Arch>
constexpr int vector_registers() {
  return xsimd::batch<float, Arch>::size == 16 || std::is_base_of_v<xsimd::neon, Arch> ? 32 : 16;
}

// Rows up to which decode_scores runs the tiles above (a row's key batches
// folded into scores), and past which outer_scores.
constexpr int64_t kMaxFoldedRows = 4;

// Rows of an outer_scores tile: kRows x 2 accumulators, two batches of keys
// and a broadcast in registers.
template <class Arch>
constexpr int64_t outer_tile_rows() {
  return vector_registers<Arch>() == 32 ? 12 : 6;
}

// The scores of rows [0, rows) (rows <= kRows; qt holds kRows rows, those
// past `rows` not stored) by the `count` keys of a chunk of kBatches
// batches' lanes: out[r * ld_scores + i] (+)= alpha sum_c qt[r * ld_qt + c]
// kt[c * ld_kt + i] for c < width, adding to what is there when `add`. kt
// holds zeros past `count`.
template <class Arch, class T, int64_t kBatches>
void outer_tile(const float* qt, int64_t ld_qt, int64_t rows, const T* kt, int64_t ld_kt,
                int64_t count, int64_t width, float alpha, bool add, float* out,
                int64_t ld_scores) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  constexpr int64_t kRows = outer_tile_rows<Arch>();
  // (Loops over the sums unrolled, as in decode_values_tile.)
  batch sums[kRows][kBatches];
#pragma GCC unroll 12
  for (int64_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int64_t h = 0; h < kBatches; ++h) sums[r][h] = batch(0.0f);
  }
  for (int64_t c = 0; c < width; ++c) {
    batch keys[kBatches];
#pragma GCC unroll 2
    for (int64_t h = 0; h < kBatches; ++h) keys[h] = load_floats<Arch>(kt + c * ld_kt + h * lanes);
#pragma GCC unroll 12
    for (int64_t r = 0; r < kRows; ++r) {
      const batch a(qt[r * ld_qt + c]);
#pragma GCC unroll 2
      for (int64_t h = 0; h < kBatches; ++h) {
        sums[r][h] = fused_multiply_add<Arch>(a, keys[h], sums[r][h]);
      }
    }
  }
  // (Each batch passed by value, in a loop of constant bound over the
  // batches: indexing the sums by a count known at run time put them on the
  // stack.)
  const auto put = [&](batch sum, float* to, int64_t n) {
    batch value = sum * batch(alpha);
    if (n == lanes) {
      if (add) value += batch::load_unaligned(to);
      value.store_unaligned(to);
    } else if (n > 0) {
      if (add) value += load_partial<Arch>(to, n, 0.0f);
      store_partial<Arch>(value, to, n);
    }
  };
  for (int64_t r = 0; r < std::min(kRows, rows); ++r) {
    for (int64_t h = 0; h < kBatches; ++h) {
      put(sums[r][h], out + r * ld_scores + h * lanes,
          std::clamp<int64_t>(count - h * lanes, 0, lanes));
    }
  }
}

// decode_scores for more than kMaxFoldedRows rows, as outer products: for
// a group of keys and a slice of dim, the keys are transposed into kt (per
// chunk of two batches' lanes, kt[chunk][c]: the chunk's elements c, zeros
// past the last key) and each tile of rows of q is copied (widened) into
// qt; a tile's scores then accumulate, per c, qt[r][c] broadcast once per
// row against kt's batches (outer_tile; one batch for a last chunk of at
// most one batch's keys). No lanes are folded (with dims of 32 to 128 the
// folds of decode_scores_rows cost as much as the products), each key is
// transposed once for all the rows, and the broadcasts read qt at fixed
// offsets. A slice of dim past the first adds its products to the scores
// written.
template <class Arch, class T>
void outer_scores(const T* q, int64_t ldq, int64_t rows, const T* k, int64_t ldk, int64_t keys,
                  int64_t dim, float alpha, float* scores, int64_t ld_scores) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  constexpr int64_t kChunk = 2 * lanes;
  constexpr int64_t kGroupKeys = 64;
  constexpr int64_t kSlice = 64;  // kt: 16 KiB in fp32
  constexpr int64_t kRows = outer_tile_rows<Arch>();
  static_assert(kGroupKeys % kChunk == 0, "a group is whole chunks");
  // kt as the bits the transposes move (loaded as T by load_floats).
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>;
  alignas(64) Bits kt[kGroupKeys * kSlice];
  alignas(64) float qt[kRows * kSlice];
  if (dim == 0) {  // (no slice: sums of no products)
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(scores + r * ld_scores, scores + r * ld_scores + keys, 0.0f);
    }
    return;
  }
  for (int64_t g0 = 0; g0 < keys; g0 += kGroupKeys) {
    const int64_t group_keys = std::min(kGroupKeys, keys - g0);
    const int64_t chunks = ceil_div(group_keys, kChunk);
    for (int64_t c0 = 0; c0 < dim; c0 += kSlice) {
      const int64_t width = std::min(kSlice, dim - c0);
      for (int64_t t = 0; t < chunks; ++t) {
        const int64_t count = std::min(kChunk, group_keys - t * kChunk);
        const Bits* from = reinterpret_cast<const Bits*>(k + (g0 + t * kChunk) * ldk + c0);
        Bits* to = kt + t * kSlice * kChunk;
        if constexpr (sizeof(T) == 4) {
          transpose_32<Arch>(from, count, width, ldk, to, kChunk);
        } else {
          transpose_16<Arch>(from, count, width, ldk, to, kChunk);
        }
        if (count < kChunk) {
          for (int64_t c = 0; c < width; ++c) {
            std::fill(to + c * kChunk + count, to + (c + 1) * kChunk, Bits(0));
          }
        }
      }
      for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
        const int64_t tile_rows = std::min(kRows, rows - r0);
        // (A tile short of rows repeats its last.)
        for (int64_t r = 0; r < kRows; ++r) {
          const T* row = q + (r0 + std::min(r, tile_rows - 1)) * ldq + c0;
          for (int64_t c = 0; c < width; c += lanes) {
            const batch part = c + lanes <= width ? load_floats<Arch>(row + c)
                                                  : load_floats_partial<Arch>(row + c, width - c);
            part.store_aligned(qt + r * kSlice + c);
          }
        }
        for (int64_t t = 0; t < chunks; ++t) {
          const int64_t count = std::min(kChunk, group_keys - t * kChunk);
          const T* kc = reinterpret_cast<const T*>(kt + t * kSlice * kChunk);
          float* out = scores + r0 * ld_scores + g0 + t * kChunk;
          if (count <= lanes) {
            outer_tile<Arch, T, 1>(qt, kSlice, tile_rows, kc, kChunk, count, width, alpha, c0 > 0,
                                   out, ld_scores);
          } else {
            outer_tile<Arch, T, 2>(qt, kSlice, tile_rows, kc, kChunk, count, width, alpha, c0 > 0,
                                   out, ld_scores);
          }
        }
      }
    }
  }
}

// scores[r * ld_scores + j] = alpha sum_c q[r * ldq + c] k[j * ldk + c] for
// r < rows, j < keys, c < dim: up to kMaxFoldedRows rows in one tile
// (Products'), more as outer_scores.
template <class Arch, class T, class Products = WidenedProducts<Arch, T>>
void decode_scores(const T* q, int64_t ldq, int64_t rows, const T* k, int64_t ldk, int64_t keys,
                   int64_t dim, float alpha, float* scores, int64_t ld_scores) {
  if (rows > kMaxFoldedRows) {
    outer_scores<Arch, T>(q, ldq, rows, k, ldk, keys, dim, alpha, scores, ld_scores);
    return;
  }
  switch (rows) {
    case 0:
      break;
    case 1:
      decode_scores_rows<Arch, T, 1, Products>(q, ldq, 1, k, ldk, keys, dim, alpha, scores,
                                               ld_scores);
      break;
    case 2:
      decode_scores_rows<Arch, T, 2, Products>(q, ldq, 2, k, ldk, keys, dim, alpha, scores,
                                               ld_scores);
      break;
    default:  // 3 or kMaxFoldedRows
      decode_scores_rows<Arch, T, kMaxFoldedRows, Products>(q, ldq, rows, k, ldk, keys, dim,
                                                            alpha, scores, ld_scores);
  }
}

// Columns [c0, c0 + kColumns * lanes) of acc's rows [0, kRows), or with
// kPartial the dim - c0 < lanes columns of one batch (kColumns 1), += sum_j
// probs[r * ld_probs + j] v[j * ldv + c] over keys [0, keys): kRows x
// kColumns accumulators held in registers across the keys, each value
// batch loaded (widened from bf16) once for all the rows.
template <class Arch, class T, int kRows, int kColumns, bool kPartial>
void decode_values_tile(const float* probs, int64_t ld_probs, const T* v, int64_t ldv, int64_t keys,
                        int64_t c0, int64_t dim, float* acc, int64_t ld_acc,
                        const NextRows<T>& next) {
  static_assert(!kPartial || kColumns == 1, "a partial tile is one batch");
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  const int64_t count = dim - c0;  // (with kPartial)
  // (Every loop over the sums is unrolled: GCC 12 for aarch64 otherwise
  // kept a row's 8 sums, or every tile's, in memory across the keys.)
  batch sums[kRows][kColumns];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < kColumns; ++t) sums[r][t] = batch(0.0f);
  }
  for (int64_t j = 0; j < keys; ++j) {
    if (c0 == 0) next.prefetch(j);
    const T* vj = v + j * ldv + c0;
    batch p[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) p[r] = batch(probs[r * ld_probs + j]);
#pragma GCC unroll 8
    for (int t = 0; t < kColumns; ++t) {
      const batch value = load_values<Arch, kPartial>(vj + t * lanes, count);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        sums[r][t] = fused_multiply_add<Arch>(p[r], value, sums[r][t]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < kColumns; ++t) {
      float* out = acc + r * ld_acc + c0 + t * lanes;
      const batch sum = load_values<Arch, kPartial>(out, count) + sums[r][t];
      store_values<Arch, kPartial>(sum, out, count);
    }
  }
}

// Keys per chunk of decode_values: their values stay in the L1 cache while
// every column tile reads them.
constexpr int64_t kDecodeChunkKeys = 64;

// Column batches of decode_values' widest tile for `rows` rows: rows x
// columns accumulators, `rows` probabilities and a value batch in
// registers. Two FMA pipes of 4 cycles' latency need 8 independent sums
// (one row of 2 batches waited on its FMAs): 8, 4, 3 and 2 batches for 1
// to 4 rows with 16 vector registers; with 32, 8 (a head of 128 floats in
// one pass at 16 lanes), 8, 6 and 4.
template <class Arch>
constexpr int value_columns(int64_t rows) {
  constexpr int chains = vector_registers<Arch>() / 2;
  return std::clamp(int((chains + rows - 1) / rows), chains / 4, 8);
}

// Rows [0, kRows) of decode_values over keys [0, keys) (a chunk), tile by
// tile: whole tiles of value_columns batches, then of half as many and so
// on, then one partial batch; the first tile asks for the next chunk's rows.
template <class Arch, class T>
struct WidenedValues {
  // The columns of the widest tile for `rows` rows (1 to 4).
  static constexpr int64_t widest_tile(int64_t rows) {
    return value_columns<Arch>(rows) * int64_t(xsimd::batch<float, Arch>::size);
  }

  template <int kRows>
  static void rows(const float* probs, int64_t ld_probs, const T* v, int64_t ldv, int64_t keys,
                   int64_t dim, float* acc, int64_t ld_acc, const NextRows<T>& next) {
    // One tile reading whole rows asks for nothing: the hardware follows it
    // (asking as well slowed one query row of fp32 by 5-15%).
    const NextRows<T> ask = dim > widest_tile(kRows) ? next : NextRows<T>{};
    const int64_t c0 = whole_tiles<kRows, value_columns<Arch>(kRows)>(
        probs, ld_probs, v, ldv, keys, 0, dim, acc, ld_acc, ask);
    if (c0 < dim) {
      decode_values_tile<Arch, T, kRows, 1, true>(probs, ld_probs, v, ldv, keys, c0, dim, acc,
                                                  ld_acc, ask);
    }
  }

 private:
  // Whole tiles of kColumns batches from c0 on, then of kColumns / 2...;
  // returns where they end.
  template <int kRows, int kColumns>
  static int64_t whole_tiles(const float* probs, int64_t ld_probs, const T* v, int64_t ldv,
                             int64_t keys, int64_t c0, int64_t dim, float* acc, int64_t ld_acc,
                             const NextRows<T>& next) {
    constexpr int64_t tile = kColumns * int64_t(xsimd::batch<float, Arch>::size);
    for (; c0 + tile <= dim; c0 += tile) {
      decode_values_tile<Arch, T, kRows, kColumns, false>(probs, ld_probs, v, ldv, keys, c0, dim,
                                                          acc, ld_acc, next);
    }
    if constexpr (kColumns > 1) {
      return whole_tiles<kRows, kColumns / 2>(probs, ld_probs, v, ldv, keys, c0, dim, acc, ld_acc,
                                              next);
    } else {
      return c0;
    }
  }
};

// acc[r * ld_acc + c] = (accumulate ? acc[..] : 0) + sum_j probs[r * ld_probs
// + j] v[j * ldv + c] for r < rows, c < dim, j < keys: keys in chunks of
// kDecodeChunkKeys, rows in groups of up to 4, each Values::rows.
template <class Arch, class T, class Values = WidenedValues<Arch, T>>
void decode_values(const float* probs, int64_t ld_probs, int64_t rows, const T* v, int64_t ldv,
                   int64_t keys, int64_t dim, bool accumulate, float* acc, int64_t ld_acc) {
  constexpr int kMaxRows = 4;
  if (!accumulate) {
    for (int64_t r = 0; r < rows; ++r) std::fill(acc + r * ld_acc, acc + r * ld_acc + dim, 0.0f);
  }
  // The first chunk's rows at once, then each next chunk's as the one
  // before it is read: into L2 where one group of rows reads them in one or
  // two column tiles (rows streamed through, as the key tiles'), into L1
  // where narrower passes (SSE2's, AVX2's with several rows) or further
  // groups read them again, the first pass a line of each row. A Zen 4
  // core, a step of B1 H32 kv8 Tq1 d128 against 8192 keys: L2 took the
  // AVX-512 path's fp32 step 4.1 to 3.5 ms, L1 the AVX2 path's 5.5 to 4.7
  // and SSE2's 7.9 to 7.0.
  const int64_t row_bytes = dim * int64_t(sizeof(T));
  const CacheLevel level = rows <= kMaxRows && dim <= 2 * Values::widest_tile(rows)
                               ? CacheLevel::l2
                               : CacheLevel::l1;
  prefetch_rows(level, v, ldv, 0, std::min(kDecodeChunkKeys, keys), row_bytes);
  for (int64_t j0 = 0; j0 < keys; j0 += kDecodeChunkKeys) {
    const int64_t chunk = std::min(kDecodeChunkKeys, keys - j0);
    const T* vc = v + j0 * ldv;
    // The next chunk's rows, asked for by the first group of rows.
    const int64_t next_keys = std::min(kDecodeChunkKeys, keys - j0 - chunk);
    const NextRows<T> next{next_keys > 0 ? vc + chunk * ldv : vc, ldv, next_keys, row_bytes,
                           level};
    for (int64_t r0 = 0; r0 < rows; r0 += kMaxRows) {
      const float* pr = probs + r0 * ld_probs + j0;
      float* ar = acc + r0 * ld_acc;
      const NextRows<T> ask = r0 == 0 ? next : NextRows<T>{};
      switch (std::min<int64_t>(kMaxRows, rows - r0)) {
        case 1:
          Values::template rows<1>(pr, ld_probs, vc, ldv, chunk, dim, ar, ld_acc, ask);
          break;
        case 2:
          Values::template rows<2>(pr, ld_probs, vc, ldv, chunk, dim, ar, ld_acc, ask);
          break;
        case 3:
          Values::template rows<3>(pr, ld_probs, vc, ldv, chunk, dim, ar, ld_acc, ask);
          break;
        default:
          Values::template rows<4>(pr, ld_probs, vc, ldv, chunk, dim, ar, ld_acc, ask);
      }
    }
  }
}

}  // namespace posenc::kernels
