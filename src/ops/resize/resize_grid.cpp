#include "ops/resize/resize_grid.hpp"

#include "kernels/kernel_table.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {

void resize_grid(const ExecContext& ctx, const GridResize& grid, const float* in, float* out) {
  const ResizeKernels& kernels = ctx.kernels->resize;
  const int64_t new_height = grid.along_height.out_size, new_width = grid.along_width.out_size;
  const int64_t line_floats = grid.along_width.in_size * grid.columns;
  const size_t height_bytes = taps_bytes(grid.along_height);
  const CallScratch<uint8_t, struct ResizeTapsTag> taps(
      height_bytes + taps_bytes(grid.along_width), ctx.num_threads);
  const AxisTaps ty = axis_taps(grid.along_height, taps.get());
  const AxisTaps tx = axis_taps(grid.along_width, taps.get() + height_bytes);
  // A thread's line: the input resized along the height, in double.
  const RegionScratch<double, struct ResizeGridLineTag> scratch(
      region_threads(ctx.num_threads, new_height), line_floats);
  parallel_for(ctx.num_threads, new_height, [&](int64_t y, int slot) {
    double* line = scratch.slot(slot);
    kernels.weigh_float_rows(in, line_floats, ty.indices_of(y), ty.weights_of(y),
                             ty.count[y], line_floats, line);
    for (int64_t x = 0; x < new_width; ++x) {
      kernels.weigh_double_rows(line, grid.columns, tx.indices_of(x), tx.weights_of(x),
                                tx.count[x], grid.columns,
                                out + (y * new_width + x) * grid.columns);
    }
  });
}

}  // namespace posenc::ops
