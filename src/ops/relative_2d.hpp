// 2D relative logits (posenc_relative_logits_2d and _decomposed); arguments
// validated by api/relative.cpp.
#pragma once

#include <cstdint>

#include "runtime/context.hpp"

namespace posenc::ops {

void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   int64_t height, int64_t width, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads, float* rel_h, float* rel_w);

void relative_logits_2d(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t height,
                        int64_t width, int64_t dim, const float* q, const float* row_table,
                        const float* column_table, int64_t table_heads, float* out);

}  // namespace posenc::ops
