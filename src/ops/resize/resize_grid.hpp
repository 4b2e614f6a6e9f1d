// A grid of rows (height x width cells, each a row of `columns` floats)
// resized separably: along the grid's rows, then its columns.
#pragma once

#include <cstdint>

#include "ops/resize/axis_taps.hpp"
#include "runtime/context.hpp"

namespace posenc::ops {

struct GridResize {
  int64_t height, width;  // the input grid
  int64_t columns;        // floats per cell
  AxisTaps along_height;  // new_height outputs over height inputs
  AxisTaps along_width;   // new_width outputs over width inputs
};

// in [height*width, columns] to out [new_height*new_width, columns] on the
// context's threads (a task per output row of the grid), summed in double
// and rounded once: the same bits for any thread count.
void resize_grid(const ExecContext& ctx, const GridResize& grid, const float* in, float* out);

}  // namespace posenc::ops
