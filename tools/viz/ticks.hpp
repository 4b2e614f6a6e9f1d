// Where to put tick labels along an axis of cells.
#pragma once

#include <vector>

namespace posenc::viz {

// Indices k in [0, count) whose values first + k are multiples of a step of
// 1, 2 or 5 times a power of ten, the smallest step giving at most
// max_ticks ticks that are at least min_gap pixels apart when each cell is
// cell pixels wide. Returns at least one index.
std::vector<int> tick_indices(int count, int first, int cell, int min_gap, int max_ticks = 9);

}  // namespace posenc::viz
