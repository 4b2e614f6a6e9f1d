// Heatmap figures of posenc viz: tick placement, orientation of the cells,
// the colour scale and the marker.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "viz/heatmap.hpp"
#include "viz/ticks.hpp"

namespace posenc::viz {
namespace {

TEST(VizTicks, PicksRoundStepsThatFit) {
  EXPECT_EQ(tick_indices(64, 0, 8, 40), (std::vector<int>{0, 10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(tick_indices(5, 0, 100, 10), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(tick_indices(1, 0, 1, 50), (std::vector<int>{0}));
  EXPECT_EQ(tick_indices(3, 0, 1, 50), (std::vector<int>{0}));
}

TEST(VizTicks, OffsetAxesTickAtMultiplesOfTheStepIncludingZero) {
  // Values -11 .. 11: the ticks show -10, -5, 0, 5, 10.
  EXPECT_EQ(tick_indices(23, -11, 20, 30), (std::vector<int>{1, 6, 11, 16, 21}));
}

// Where the colour c first appears, scanning rows top to bottom.
std::pair<int, int> first_pixel(const Image& image, Rgb c) {
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      if (image.at(x, y) == c) return {x, y};
    }
  }
  return {-1, -1};
}

Heatmap two_by_three() {
  Heatmap h;
  h.rows = 2;
  h.cols = 3;
  h.values = {-1, 0, 1, 0.5f, 0.5f, 0.5f};
  h.title = "t";
  h.scale = {&ColorMap::diverging(), -1.0, 1.0};
  return h;
}

TEST(VizHeatmap, RowZeroIsAtTheTopAndColumnZeroAtTheLeft) {
  const Heatmap h = two_by_three();
  const Image image = render_heatmap(h);
  const auto lo = first_pixel(image, ColorMap::diverging().at(0.0));
  const auto mid = first_pixel(image, ColorMap::diverging().at(0.5));
  const auto row1 = first_pixel(image, ColorMap::diverging().at(0.75));
  ASSERT_GE(lo.first, 0);
  ASSERT_GE(row1.first, 0);
  EXPECT_LT(lo.first, mid.first);    // -1 left of 0 in row 0
  EXPECT_LT(lo.second, row1.second);  // row 0 above row 1
  EXPECT_EQ(lo.first, row1.first);    // both rows start at the same column
}

// With every cell at 0 (white), the reddest and the bluest pixels are on the
// colour bar: red (high) must be above blue (low).
TEST(VizHeatmap, ColorBarRunsFromHighAtTheTopToLowAtTheBottom) {
  Heatmap h = two_by_three();
  h.values.assign(6, 0.0f);
  const Image image = render_heatmap(h);
  int reddest_y = -1, bluest_y = -1, most_red = 0, most_blue = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      const Rgb c = image.at(x, y);
      if (c.r - c.b > most_red) most_red = c.r - c.b, reddest_y = y;
      if (c.b - c.r > most_blue) most_blue = c.b - c.r, bluest_y = y;
    }
  }
  ASSERT_GE(reddest_y, 0);
  ASSERT_GE(bluest_y, 0);
  EXPECT_LT(reddest_y, bluest_y);
}

TEST(VizHeatmap, MarkerFramesTheMarkedCell) {
  Heatmap h = two_by_three();
  const Image plain = render_heatmap(h);
  h.marker = Cell{1, 2};
  const Image marked = render_heatmap(h);
  ASSERT_EQ(plain.width(), marked.width());
  // The marker only adds black and white pixels.
  int changed = 0;
  for (int y = 0; y < plain.height(); ++y) {
    for (int x = 0; x < plain.width(); ++x) {
      if (plain.at(x, y) == marked.at(x, y)) continue;
      ++changed;
      EXPECT_TRUE(marked.at(x, y) == kBlack || marked.at(x, y) == kWhite);
    }
  }
  EXPECT_GT(changed, 0);
}

// Bounding box (x0, y0, x1, y1) of the pixels of colour c.
std::array<int, 4> extent(const Image& image, Rgb c) {
  std::array<int, 4> box{image.width(), image.height(), -1, -1};
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      if (!(image.at(x, y) == c)) continue;
      box = {std::min(box[0], x), std::min(box[1], y), std::max(box[2], x), std::max(box[3], y)};
    }
  }
  return box;
}

// A 2 x 2 map's cells are 256 px: its marker stays within 6 px of the marked
// cell (NaN, grey), off the title and the colour bar's labels.
TEST(VizHeatmap, MarkerOfABigCellStaysNearIt) {
  Heatmap h;
  h.rows = 2;
  h.cols = 2;
  h.values = {0.0f, std::nanf(""), 0.5f, 1.0f};
  h.title = "a title";
  h.scale = {&ColorMap::diverging(), -1.0, 1.0};
  const Image plain = render_heatmap(h);
  const std::array<int, 4> cell = extent(plain, Rgb{128, 128, 128});
  ASSERT_GE(cell[2] - cell[0] + 1, 200);
  h.marker = Cell{0, 1};
  const Image marked = render_heatmap(h);
  int changed = 0;
  for (int y = 0; y < plain.height(); ++y) {
    for (int x = 0; x < plain.width(); ++x) {
      if (plain.at(x, y) == marked.at(x, y)) continue;
      ++changed;
      EXPECT_TRUE(x >= cell[0] - 6 && x <= cell[2] + 6 && y >= cell[1] - 6 && y <= cell[3] + 6)
          << "the marker drew at (" << x << ", " << y << ")";
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(changed, 0);
}

// A table of 32 rows by 4 columns, all NaN (grey, a colour the colour bar
// lacks): its plot is 64 x 512 with square cells and 512 x 512 stretched.
TEST(VizHeatmap, CellsAreSquareUnlessStretched) {
  Heatmap h;
  h.rows = 32;
  h.cols = 4;
  h.values.assign(128, std::nanf(""));
  const Rgb c{128, 128, 128};
  std::array<int, 4> box = extent(render_heatmap(h), c);
  EXPECT_EQ(box[2] - box[0] + 1, 64);
  EXPECT_EQ(box[3] - box[1] + 1, 512);
  h.square_cells = false;
  box = extent(render_heatmap(h), c);
  EXPECT_EQ(box[2] - box[0] + 1, 512);
  EXPECT_EQ(box[3] - box[1] + 1, 512);
}

TEST(VizHeatmap, RejectsMismatchedSizesAndEmptyScales) {
  Heatmap h = two_by_three();
  h.values.pop_back();
  EXPECT_THROW(render_heatmap(h), std::invalid_argument);
  h = two_by_three();
  h.scale.hi = h.scale.lo;
  EXPECT_THROW(render_heatmap(h), std::invalid_argument);
}

TEST(VizHeatmap, SymmetricScaleCentresZero) {
  const ColorScale s = symmetric_scale({0.5f, -2.0f, 1.0f});
  EXPECT_EQ(s.lo, -2.0);
  EXPECT_EQ(s.hi, 2.0);
  const ColorScale zeros = symmetric_scale({0.0f, 0.0f});
  EXPECT_EQ(zeros.hi, 1.0);
}

}  // namespace
}  // namespace posenc::viz
