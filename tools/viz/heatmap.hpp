// A matrix drawn as a figure: cells coloured by a colour map (row 0 at the
// top, column 0 at the left), a title, axis labels with ticks, a colour bar
// with its range and, optionally, one cell marked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "colormap.hpp"
#include "image.hpp"

namespace posenc::viz {

struct Axis {
  std::string label;
  int first = 0;       // the value shown for index 0 (ticks show first + index)
  bool ticks = true;
};

struct Cell {
  int row = 0;
  int col = 0;
};

struct ColorScale {
  const ColorMap* map = &ColorMap::diverging();
  double lo = -1.0;
  double hi = 1.0;
};

struct Heatmap {
  int rows = 0;
  int cols = 0;
  std::vector<float> values;  // [rows, cols], row-major
  std::string title;
  Axis x;  // along the columns
  Axis y;  // along the rows
  ColorScale scale;
  std::optional<Cell> marker;
  // true: cells are square (maps of space or positions against positions);
  // false: each axis is stretched to the plot size on its own (tables).
  bool square_cells = true;
};

// [-m, m] with m the largest |value| (1 if all are zero): for signed data on
// a diverging map, so that 0 is the map's centre.
ColorScale symmetric_scale(const std::vector<float>& values);

// Throws std::invalid_argument if the sizes and values disagree or the scale
// is empty.
Image render_heatmap(const Heatmap& heatmap);

}  // namespace posenc::viz
