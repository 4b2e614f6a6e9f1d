// Reference loops for the position logits (posenc/relative.h): naive loops
// accumulating in double, and Music Transformer's skew as
// bottleneck-transformer-pytorch writes it (pad / flatten / pad / reshape /
// slice) in plain C++: the baseline the gather must equal bit for bit
// (docs/design.md section 4).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace posenc::reference {

// The 1D relative table's rows as posenc/relative.h and posenc/attention.h
// state them, written out here rather than taken from the ops'
// RelativeIndex, so that the reference does not share the rule it checks.
// Query i sits at position p + i, key j at j. Clipped (K > 0): 2K + 1 rows,
// the distance j - (p + i) clamped to [-K, K], plus K. Unclipped: row
// j - i + queries - 1, of queries + keys - 1 + max(p, 0) rows.
inline int64_t table_rows_1d(int64_t p, int64_t queries, int64_t keys, int64_t clip) {
  return clip > 0 ? 2 * clip + 1 : queries + keys - 1 + std::max<int64_t>(p, 0);
}
inline int64_t table_row_1d(int64_t p, int64_t queries, int64_t clip, int64_t i, int64_t j) {
  if (clip > 0) return std::clamp<int64_t>(j - (p + i), -clip, clip) + clip;
  return j - i + queries - 1;
}

// One axis of the 2D relative tables (posenc/attention.h, RELATIVE_2D),
// written out here rather than taken from the ops' RelativeAxis: query
// coordinates [0, q), key coordinates [0, k), 2 max(q, k) - 1 rows. Query
// minus key is segment_anything's get_rel_pos as its float32 tensors
// compute it,
//   q_coords = arange(q)[:, None] * max(k / q, 1.0)
//   k_coords = arange(k)[None, :] * max(q / k, 1.0)
//   row = (q_coords - k_coords + (k - 1) * max(q / k, 1.0)).long()
// (the Python floats rounded to float32 where they meet a tensor), clamped
// to the table as posenc/attention.h states; key minus query takes the
// mirrored row.
struct Axis2d {
  int64_t q, k;
  bool query_minus_key;
  int64_t rows() const { return 2 * std::max(q, k) - 1; }
  int64_t row(int64_t a, int64_t c) const;
};

// [batch, heads, queries, keys]; table of [table_heads, keys, dim].
std::vector<double> absolute_logits(int64_t batch, int64_t heads, int64_t queries,
                                    int64_t keys, int64_t dim, const float* q,
                                    const float* table, int64_t table_heads);

struct RelativeOptions {
  int64_t query_offset = 0;
  int64_t clip = 0;
  bool causal = false;
};

// As posenc_relative_logits_1d: masked logits are -infinity.
std::vector<double> relative_logits_1d(int64_t batch, int64_t heads, int64_t queries,
                                       int64_t keys, int64_t dim, const float* q,
                                       const float* table, int64_t table_heads,
                                       const RelativeOptions& options);

// rel_h [batch, heads, N, height] and rel_w [batch, heads, N, width].
struct Relative2d {
  std::vector<double> rel_h, rel_w;
};
Relative2d relative_logits_2d_decomposed(int64_t batch, int64_t heads, int64_t height,
                                         int64_t width, int64_t dim, const float* q,
                                         const float* row_table, const float* column_table,
                                         int64_t table_heads);

// As posenc_relative_logits_2d_maps: over the query map axis_h.q x axis_w.q,
// rel_h [batch, heads, N, axis_h.k] and rel_w [batch, heads, N, axis_w.k],
// the table rows by the axes' rows; tables of axis_h.rows() and
// axis_w.rows() rows.
Relative2d relative_logits_2d_maps(int64_t batch, int64_t heads, const Axis2d& axis_h,
                                   const Axis2d& axis_w, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads);

// The full bias [batch, heads, N, N], each value rel_h + rel_w in double.
std::vector<double> relative_logits_2d(int64_t batch, int64_t heads, int64_t height,
                                       int64_t width, int64_t dim, const float* q,
                                       const float* row_table, const float* column_table,
                                       int64_t table_heads);

// That skew of one [length, 2*length-1] matrix, step by step: append a
// zero column ([length, 2*length]), flatten, append length-1 zeros, view as
// [length+1, 2*length-1], copy rows [0, length) and columns
// [length-1, 2*length-1) to out [length, length]. workspace holds
// pad_reshape_workspace(length) floats (the two padded copies).
int64_t pad_reshape_workspace(int64_t length);
void pad_reshape_rel_to_abs(int64_t length, const float* in, float* out, float* workspace);

// The same over [matrices, length, 2*length-1] into [matrices, length, length].
std::vector<float> pad_reshape_rel_to_abs(int64_t matrices, int64_t length, const float* in);

}  // namespace posenc::reference
