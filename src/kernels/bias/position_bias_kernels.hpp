// Kernels of the position biases without q (posenc/bias.h): ALiBi's rows,
// computed (written for the dense bias, added to the fused attention's
// scores), and a 2D window's, copied or added in runs (the 1D tables' and
// T5's rows are gathers: RelativeKernels::gather_row,
// AttentionBiasKernels::gather_add).
#pragma once

#include <cstdint>

namespace posenc {

// Whether ALiBi's distances d0 .. d0 + count - 1 take int32 arithmetic,
// which converts to float in vector instructions (the same values): every
// row of a sequence below 2^31 tokens. Above INT32_MIN, whose absolute
// value int32 does not hold; count within int32 too (a negative d0 lets it
// pass 2^31).
inline bool alibi_distances_fit_int32(int64_t d0, int64_t count) {
  return d0 > INT32_MIN && count <= INT32_MAX && d0 + count <= INT32_MAX;
}

struct PositionBiasKernels {
  // ALiBi's row: out[c] = slope * float(d0 + c) for c < count, or
  // slope * float(-|d0 + c|) bidirectional, one fp32 rounding of the
  // product.
  void (*alibi_row)(float slope, bool bidirectional, int64_t d0, int64_t count, float* out);
  // The same with non-temporal stores, as RelativeKernels::gather_row_stream
  // (fenced by the caller).
  void (*alibi_row_stream)(float slope, bool bidirectional, int64_t d0, int64_t count,
                           float* out);
  // The fused attention's ALiBi row: scores[c] = fma(slope, float(d),
  // scores[c]) for c < n, d the distance alibi_row takes, fma being
  // fused_multiply_add (as AttentionBiasKernels::add_mask_f32 says), the
  // same in every column and on both sides of int32's limits; returns the
  // largest new score (-inf for n = 0; a NaN may or may not win). (Its
  // arguments in AttentionBiasKernels' order.)
  float (*add_alibi_row)(float slope, bool bidirectional, int64_t d0, float* scores, int64_t n);
  // out[r * length + c] = from[r * stride + c] for r < runs, c < length:
  // TABLE_2D's row, a run of Ww entries per key row of the window
  // (ops/bias/table_2d_index.hpp). Reads and writes nothing else.
  void (*copy_runs)(const float* from, int64_t stride, int64_t runs, int64_t length, float* out);
  // The same with non-temporal stores (fenced by the caller), the runs
  // staged in the L1 cache so that whole lines are streamed; on AVX-512
  // only (elsewhere the stage cost more than it saved: copy_runs).
  void (*copy_runs_stream)(const float* from, int64_t stride, int64_t runs, int64_t length,
                           float* out);
  // A key block's part of TABLE_2D's row, added to the fused attention's
  // scores: scores[c] += from[t * stride + x] for c < n, with
  // (t, x) = divmod(column + c, length), 0 <= column < length (runs of
  // `length` >= 1 entries, the first from `column`); returns the largest new
  // score, as add_alibi_row. Reads and writes nothing else.
  float (*add_runs)(const float* from, int64_t stride, int64_t column, int64_t length,
                    float* scores, int64_t n);
};

}  // namespace posenc
