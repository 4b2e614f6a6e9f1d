#include "colormap.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace posenc::viz {

ColorMap::ColorMap(std::vector<Rgb> control_points) : points_(std::move(control_points)) {
  if (points_.size() < 2) throw std::invalid_argument("a colour map needs two control points");
}

Rgb ColorMap::at(double t) const {
  if (std::isnan(t)) return {128, 128, 128};
  t = std::fmin(std::fmax(t, 0.0), 1.0);
  const double position = t * double(points_.size() - 1);
  const size_t i = std::min(size_t(position), points_.size() - 2);
  const double f = position - double(i);
  const Rgb a = points_[i], b = points_[i + 1];
  auto mix = [f](uint8_t u, uint8_t v) {
    return uint8_t(std::lround(double(u) + f * (double(v) - double(u))));
  };
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

const ColorMap& ColorMap::sequential() {
  static const ColorMap map({{68, 1, 84},
                             {71, 44, 122},
                             {59, 81, 139},
                             {44, 113, 142},
                             {33, 144, 141},
                             {39, 173, 129},
                             {92, 200, 99},
                             {170, 220, 50},
                             {253, 231, 37}});
  return map;
}

const ColorMap& ColorMap::diverging() {
  static const ColorMap map({{40, 60, 150},
                             {67, 125, 190},
                             {146, 190, 222},
                             {247, 247, 247},
                             {240, 160, 130},
                             {205, 70, 60},
                             {150, 20, 35}});
  return map;
}

}  // namespace posenc::viz
