#include "ops/resize/tables.hpp"

#include <algorithm>

#include "ops/resize/resize_grid.hpp"

namespace posenc::ops {
namespace {

// An axis resized to a size (s = in / out, or 1 / scale as torch takes a
// scale_factor > 0).
AxisResize sized(int64_t in_size, int64_t out_size, Interpolation interpolation,
                 bool antialias = false, double scale = 0) {
  const double in_per_out = scale > 0 ? 1.0 / scale : double(in_size) / double(out_size);
  return AxisResize{in_size, out_size, in_per_out, interpolation, antialias};
}

// The relative tables are small: the default path's kernels on the calling thread.
ExecContext calling_thread() {
  ExecContext ctx = resolve_context(nullptr);
  ctx.num_threads = 1;
  return ctx;
}

}  // namespace

void resize_rows_linear(int64_t rows, int64_t dim, const float* in, int64_t new_rows,
                        float* out) {
  // A grid one cell wide, of dim columns, that cell copied (torch's 1D
  // linear kernel has no second axis to read).
  const GridResize grid{dim, sized(rows, new_rows, Interpolation::linear), axis_copy(1)};
  resize_grid(calling_thread(), grid, in, out);
}

void resize_bias_table_2d(int64_t heads, const Window2d& from, const Window2d& to,
                          const float* in, float* out) {
  // Rows of the table are grid cells y * (2Ww-1) + x; heads are its columns.
  const int64_t in_h = 2 * from.height - 1, in_w = 2 * from.width - 1;
  const int64_t out_h = 2 * to.height - 1, out_w = 2 * to.width - 1;
  const GridResize grid{heads, sized(in_h, out_h, Interpolation::cubic),
                        sized(in_w, out_w, Interpolation::cubic)};
  resize_grid(calling_thread(), grid, in, out);
  const int64_t extra = from.table_rows() - from.relative_rows();  // BEiT's class-token rows
  std::copy_n(in + from.relative_rows() * heads, extra * heads,
              out + to.relative_rows() * heads);
}

void resize_absolute_table_2d(const ExecContext& ctx, const posenc_absolute_resize_desc& desc,
                              const float* in, float* out) {
  const Interpolation interpolation = desc.interpolation == POSENC_INTERPOLATION_BILINEAR
                                          ? Interpolation::linear
                                          : Interpolation::cubic;
  const bool antialias = desc.antialias != 0;
  // The grid first: its scratch is taken before anything is written.
  const int64_t prefix_floats = desc.prefix_tokens * desc.dim;
  if (desc.new_height > 0 && desc.new_width > 0) {
    const GridResize grid{
        desc.dim,
        sized(desc.height, desc.new_height, interpolation, antialias, desc.height_scale),
        sized(desc.width, desc.new_width, interpolation, antialias, desc.width_scale)};
    resize_grid(ctx, grid, in + prefix_floats, out + prefix_floats);
  }
  std::copy_n(in, prefix_floats, out);
}

}  // namespace posenc::ops
