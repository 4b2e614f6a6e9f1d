// A grid of rows (height x width cells, each a row of `columns` floats)
// resized separably: along the grid's rows, then its columns.
#pragma once

#include <cstdint>

#include "ops/resize/axis_taps.hpp"
#include "runtime/context.hpp"

namespace posenc::ops {

struct GridResize {
  int64_t columns;          // floats per cell
  AxisResize along_height;  // the grid's rows, height to new_height
  AxisResize along_width;   // its columns, width to new_width
};

// in [height*width, columns] to out [new_height*new_width, columns] on the
// context's threads (a task per output row of the grid), summed in double
// and rounded once: the same bits for any thread count. The taps and the
// threads' lines are the calling thread's kept scratch, taken before
// anything is written.
void resize_grid(const ExecContext& ctx, const GridResize& grid, const float* in, float* out);

}  // namespace posenc::ops
