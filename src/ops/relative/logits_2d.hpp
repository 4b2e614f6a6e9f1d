// 2D relative logits (posenc_relative_logits_2d and _decomposed); arguments
// validated by api/relative.cpp.
//
// The decomposed logits are exact GEMMs: the queries of one map row x1 share
// the row-table window Rh[X-1-x1 .. 2X-2-x1], so rel_h of those Y queries
// is one product (Y x dim) x (dim x X) written in place; likewise the X
// queries of one map column y1 (row stride Y * dim) share the column-table
// window for rel_w. Each product is batched over heads. The full bias is
// the broadcast sum of the decomposed logits (kernels' broadcast_sum_row),
// which is also how fused attention can add the bias block by block.
//
// With SAM's conventions (posenc_relative_logits_2d_maps: a table order or
// a key map of another size, ops/relative/relative_axis.hpp) the rows of a
// query coordinate are no window: each GEMM then takes them gathered, in
// key order, into the thread's scratch.
#pragma once

#include <cstdint>

#include "ops/relative/relative_axis.hpp"
#include "runtime/context.hpp"

namespace posenc::ops {

// rel_h [batch, heads, N, axis_h.k] and rel_w [batch, heads, N, axis_w.k]
// over the query map axis_h.q x axis_w.q (N tokens); tables of
// axis_h.rows() and axis_w.rows() rows.
void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   const RelativeAxis& axis_h, const RelativeAxis& axis_w,
                                   int64_t dim, const float* q, const float* row_table,
                                   const float* column_table, int64_t table_heads,
                                   float* rel_h, float* rel_w);

// The plain problem of posenc_relative_logits_2d_decomposed: key minus
// query over one height x width map.
void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   int64_t height, int64_t width, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads, float* rel_h, float* rel_w);

// Works through rel_h and rel_w of the whole problem, batch * heads * N *
// (X + Y) floats: a fraction (X + Y) / N of out's size.
void relative_logits_2d(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t height,
                        int64_t width, int64_t dim, const float* q, const float* row_table,
                        const float* column_table, int64_t table_heads, float* out);

}  // namespace posenc::ops
