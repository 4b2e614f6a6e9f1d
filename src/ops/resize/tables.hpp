// Resizing tables trained at one size for another (posenc_resize_*):
// torch.nn.functional.interpolate's rules (axis_taps), computed in double
// and rounded once. Arguments are validated by the caller (api/).
#pragma once

#include <cstdint>

#include "ops/bias/table_2d_index.hpp"
#include "posenc/absolute.h"
#include "runtime/context.hpp"

namespace posenc::ops {

// in [rows, dim] to out [new_rows, dim], linearly along the rows (SAM's
// get_rel_pos). On the calling thread.
void resize_rows_linear(int64_t rows, int64_t dim, const float* in, int64_t new_rows,
                        float* out);

// A 2D bias table [from.table_rows(), heads] to [to.table_rows(), heads]:
// each head's (2Wh-1) x (2Ww-1) grid bicubically, the class-token rows
// copied (from.class_token == to.class_token). On the calling thread.
void resize_bias_table_2d(int64_t heads, const Window2d& from, const Window2d& to,
                          const float* in, float* out);

// A learned absolute table of a grid, its prefix rows copied.
void resize_absolute_table_2d(const ExecContext& ctx, const posenc_absolute_resize_desc& desc,
                              const float* in, float* out);

}  // namespace posenc::ops
