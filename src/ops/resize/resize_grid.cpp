#include "ops/resize/resize_grid.hpp"

#include "kernels/kernel_table.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {

void resize_grid(const ExecContext& ctx, const GridResize& grid, const float* in, float* out) {
  const ResizeKernels& kernels = ctx.kernels->resize;
  const int64_t new_height = int64_t(grid.along_height.count.size());
  const int64_t new_width = int64_t(grid.along_width.count.size());
  const int64_t line_floats = grid.width * grid.columns;
  // A thread's line: the input resized along the height, in double.
  const RegionScratch<double, struct ResizeGridLineTag> scratch(
      region_threads(ctx.num_threads, new_height), line_floats);
  parallel_for(ctx.num_threads, new_height, [&](int64_t y, int slot) {
    const AxisTaps& ty = grid.along_height;
    const AxisTaps& tx = grid.along_width;
    double* line = scratch.slot(slot);
    kernels.weigh_float_rows(in, line_floats, ty.indices_of(y), ty.weights_of(y),
                             ty.count[size_t(y)], line_floats, line);
    for (int64_t x = 0; x < new_width; ++x) {
      kernels.weigh_double_rows(line, grid.columns, tx.indices_of(x), tx.weights_of(x),
                                tx.count[size_t(x)], grid.columns,
                                out + (y * new_width + x) * grid.columns);
    }
  });
}

}  // namespace posenc::ops
