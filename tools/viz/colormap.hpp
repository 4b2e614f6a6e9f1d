// Colour maps: piecewise-linear interpolation in sRGB between evenly spaced
// control points.
#pragma once

#include <vector>

#include "image.hpp"

namespace posenc::viz {

class ColorMap {
 public:
  // At least two control points: the first is the colour of t = 0, the last
  // that of t = 1.
  explicit ColorMap(std::vector<Rgb> control_points);

  // The colour of t in [0, 1]; t is clamped, NaN gives mid grey.
  Rgb at(double t) const;
  // The colour of value on the scale [lo, hi] (lo < hi).
  Rgb at(double value, double lo, double hi) const { return at((value - lo) / (hi - lo)); }

  // Sequential, dark purple through teal to yellow, lightness increasing
  // monotonically (close to matplotlib's viridis).
  static const ColorMap& sequential();
  // Diverging for signed data: blue at 0, near-white at 0.5, red at 1.
  static const ColorMap& diverging();

 private:
  std::vector<Rgb> points_;
};

}  // namespace posenc::viz
