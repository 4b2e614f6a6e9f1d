// Colour maps of posenc viz: endpoints, clamping, and lightness order.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "viz/colormap.hpp"

namespace posenc::viz {
namespace {

// Relative luminance (Rec. 709 weights on linearized sRGB).
double luminance(Rgb c) {
  auto linear = [](uint8_t v) {
    const double s = v / 255.0;
    return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
}

std::vector<double> sampled_luminance(const ColorMap& map, int samples) {
  std::vector<double> y;
  for (int k = 0; k < samples; ++k) y.push_back(luminance(map.at(double(k) / (samples - 1))));
  return y;
}

TEST(VizColorMap, EndpointsAreTheFirstAndLastControlPoints) {
  const ColorMap map({{10, 20, 30}, {200, 100, 0}, {255, 255, 255}});
  EXPECT_EQ(map.at(0.0), (Rgb{10, 20, 30}));
  EXPECT_EQ(map.at(0.5), (Rgb{200, 100, 0}));
  EXPECT_EQ(map.at(1.0), (Rgb{255, 255, 255}));
  EXPECT_EQ(map.at(0.25), (Rgb{105, 60, 15}));
}

TEST(VizColorMap, ClampsOutsideTheUnitIntervalAndGreysNaN) {
  const ColorMap& map = ColorMap::sequential();
  EXPECT_EQ(map.at(-3.0), map.at(0.0));
  EXPECT_EQ(map.at(7.0), map.at(1.0));
  EXPECT_EQ(map.at(std::nan("")), (Rgb{128, 128, 128}));
}

TEST(VizColorMap, ValueOnARangeMapsLinearly) {
  const ColorMap& map = ColorMap::diverging();
  EXPECT_EQ(map.at(-2.0, -2.0, 2.0), map.at(0.0));
  EXPECT_EQ(map.at(0.0, -2.0, 2.0), map.at(0.5));
  EXPECT_EQ(map.at(1.0, -2.0, 2.0), map.at(0.75));
}

TEST(VizColorMap, SequentialLuminanceRisesMonotonically) {
  const std::vector<double> y = sampled_luminance(ColorMap::sequential(), 101);
  for (size_t k = 1; k < y.size(); ++k) EXPECT_GT(y[k], y[k - 1]) << "sample " << k;
  EXPECT_GT(y.back() - y.front(), 0.6);  // dark to light, not a flat map
}

TEST(VizColorMap, DivergingIsLightestAtTheCentreAndDarkerTowardBothEnds) {
  const std::vector<double> y = sampled_luminance(ColorMap::diverging(), 101);
  for (size_t k = 1; k <= 50; ++k) EXPECT_GT(y[k], y[k - 1]) << "sample " << k;
  for (size_t k = 51; k < y.size(); ++k) EXPECT_LT(y[k], y[k - 1]) << "sample " << k;
  const Rgb centre = ColorMap::diverging().at(0.5);
  EXPECT_EQ(centre.r, centre.g);  // neutral: no hue at 0
  EXPECT_EQ(centre.g, centre.b);
  const Rgb low = ColorMap::diverging().at(0.0), high = ColorMap::diverging().at(1.0);
  EXPECT_GT(low.b, low.r);   // blue end
  EXPECT_GT(high.r, high.b);  // red end
}

}  // namespace
}  // namespace posenc::viz
