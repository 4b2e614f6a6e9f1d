#include "ops/resize/axis_taps.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace posenc::ops {
namespace {

// Keys' cubic convolution kernel with parameter A at distance x.
double cubic(double x, double A) {
  x = std::abs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

double triangle(double x) { return std::max(1 - std::abs(x), 0.0); }

// Without antialias: the 2 (linear) or 4 (cubic) inputs around the source
// coordinate, indices clamped, so the same input may be read more than once
// at the borders; its weights are summed.
void interpolating_taps(int64_t in_size, double in_per_out, Interpolation interpolation,
                        int64_t o, AxisTaps& taps) {
  const bool linear = interpolation == Interpolation::linear;
  double u = (double(o) + 0.5) * in_per_out - 0.5;
  if (linear) u = std::max(u, 0.0);
  // (The index at most in_size - 1 and f within [0, 1], as torch guards them.)
  const double floor_u = std::min(std::floor(u), double(in_size - 1));
  const double f = std::clamp(u - floor_u, 0.0, 1.0);
  const std::array<double, 4> cubic_weights{cubic(1 + f, -0.75), cubic(f, -0.75),
                                            cubic(1 - f, -0.75), cubic(2 - f, -0.75)};
  const std::array<double, 4> linear_weights{1 - f, f, 0, 0};
  const std::array<double, 4>& w = linear ? linear_weights : cubic_weights;
  const int64_t raw_first = int64_t(floor_u) - (linear ? 0 : 1);
  const auto clamped = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_size - 1); };
  const int64_t n = linear ? 2 : 4;
  const int64_t first = clamped(raw_first);
  double* weights = taps.weights.data() + o * taps.stride;
  std::fill_n(weights, taps.stride, 0.0);
  for (int64_t k = 0; k < n; ++k) weights[clamped(raw_first + k) - first] += w[size_t(k)];
  taps.first[size_t(o)] = first;
  taps.count[size_t(o)] = clamped(raw_first + n - 1) - first + 1;
}

// With antialias: Pillow's filter over the support, normalized.
void antialiased_taps(int64_t in_size, double in_per_out, Interpolation interpolation,
                      int64_t o, AxisTaps& taps) {
  const bool linear = interpolation == Interpolation::linear;
  const double stretch = std::max(in_per_out, 1.0);
  const double support = (linear ? 1.0 : 2.0) * stretch;
  const double center = (double(o) + 0.5) * in_per_out;
  // (Truncation, as torch's int64 casts; a negative start is clamped to 0.)
  const int64_t first = std::max<int64_t>(int64_t(center - support + 0.5), 0);
  const int64_t end = std::min<int64_t>(int64_t(center + support + 0.5), in_size);
  double* weights = taps.weights.data() + o * taps.stride;
  std::fill_n(weights, taps.stride, 0.0);
  double total = 0;
  for (int64_t i = first; i < end; ++i) {
    const double x = (double(i) - center + 0.5) / stretch;
    weights[i - first] = linear ? triangle(x) : cubic(x, -0.5);
    total += weights[i - first];
  }
  if (total != 0) {
    for (int64_t i = first; i < end; ++i) weights[i - first] /= total;
  }
  taps.first[size_t(o)] = first;
  taps.count[size_t(o)] = end - first;
}

}  // namespace

AxisTaps axis_taps(int64_t in_size, int64_t out_size, double in_per_out,
                   Interpolation interpolation, bool antialias) {
  AxisTaps taps;
  const double reach = interpolation == Interpolation::linear ? 1.0 : 2.0;
  // An antialiased output reads fewer than 2 reach max(s, 1) + 2 inputs.
  taps.stride = antialias ? std::min<int64_t>(int64_t(2 * reach * std::max(in_per_out, 1.0)) + 2,
                                              in_size)
                          : int64_t(2 * reach);
  taps.first.resize(size_t(out_size));
  taps.count.resize(size_t(out_size));
  taps.weights.resize(size_t(out_size * taps.stride));
  for (int64_t o = 0; o < out_size; ++o) {
    if (antialias) {
      antialiased_taps(in_size, in_per_out, interpolation, o, taps);
    } else {
      interpolating_taps(in_size, in_per_out, interpolation, o, taps);
    }
  }
  return taps;
}

}  // namespace posenc::ops
