// Resizing relative tables (posenc_resize_relative_table,
// posenc_resize_relative_bias_table_2d): torch.nn.functional.interpolate's
// linear and bicubic rules with align_corners=False, computed in double and
// rounded once (torch's fp32 coordinates and weights stray by about 1e-6 of
// the values). Small tables: run on the calling thread.
#pragma once

#include <cstdint>

#include "ops/bias/table_2d_index.hpp"

namespace posenc::ops {

// in [rows, dim] to out [new_rows, dim], linearly along the rows.
void resize_rows_linear(int64_t rows, int64_t dim, const float* in, int64_t new_rows,
                        float* out);

// A 2D bias table [from.table_rows(), heads] to [to.table_rows(), heads]:
// each head's (2Wh-1) x (2Ww-1) grid bicubically, the class-token rows
// copied (from.class_token == to.class_token).
void resize_bias_table_2d(int64_t heads, const Window2d& from, const Window2d& to,
                          const float* in, float* out);

}  // namespace posenc::ops
