#include "ops/resize/axis_taps.hpp"

#include <algorithm>
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

// Output o's slots in the taps, made to read `count` inputs.
struct Slots {
  int64_t* index;
  double* weight;
};
Slots slots(const AxisTaps& taps, int64_t o, int64_t count) {
  taps.count[o] = count;
  return {taps.index + o * taps.stride, taps.weights + o * taps.stride};
}

// Without antialias: the 2 (linear) or 4 (cubic) inputs around the source
// coordinate, indices clamped. Linear keeps an axis of the same size (the
// scale aside) as torch does: input o with weight 1, then again with 0.
void interpolating_taps(int64_t in_size, int64_t out_size, double in_per_out,
                        Interpolation interpolation, int64_t o, const AxisTaps& taps) {
  const bool linear = interpolation == Interpolation::linear;
  if (linear && out_size == in_size) {
    const Slots s = slots(taps, o, 2);
    s.index[0] = s.index[1] = o;
    s.weight[0] = 1;
    s.weight[1] = 0;
    return;
  }
  double u = (double(o) + 0.5) * in_per_out - 0.5;
  if (linear) u = std::max(u, 0.0);
  // (The index at most in_size - 1 and f within [0, 1], as torch guards them.)
  const double floor_u = std::min(std::floor(u), double(in_size - 1));
  const double f = std::clamp(u - floor_u, 0.0, 1.0);
  const int64_t below = int64_t(floor_u);
  const auto clamped = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_size - 1); };
  if (linear) {
    const Slots s = slots(taps, o, 2);
    s.index[0] = below;
    s.index[1] = clamped(below + 1);
    s.weight[0] = 1 - f;
    s.weight[1] = f;
    return;
  }
  const Slots s = slots(taps, o, 4);
  for (int64_t k = 0; k < 4; ++k) {
    s.index[k] = clamped(below - 1 + k);
    s.weight[k] = cubic(f + 1 - double(k), -0.75);  // distances 1 + f, f, 1 - f, 2 - f
  }
}

// With antialias: Pillow's filter over the support, normalized.
void antialiased_taps(int64_t in_size, double in_per_out, Interpolation interpolation,
                      int64_t o, const AxisTaps& taps) {
  const bool linear = interpolation == Interpolation::linear;
  const double stretch = std::max(in_per_out, 1.0);
  const double support = (linear ? 1.0 : 2.0) * stretch;
  const double center = (double(o) + 0.5) * in_per_out;
  // (Truncation, as torch's int64 casts; a negative start is clamped to 0.)
  const int64_t first = std::max<int64_t>(int64_t(center - support + 0.5), 0);
  const int64_t end = std::min<int64_t>(int64_t(center + support + 0.5), in_size);
  const Slots s = slots(taps, o, end - first);
  double total = 0;
  for (int64_t k = 0; k < end - first; ++k) {
    const double x = (double(first + k) - center + 0.5) / stretch;
    s.index[k] = first + k;
    s.weight[k] = linear ? triangle(x) : cubic(x, -0.5);
    total += s.weight[k];
  }
  if (total != 0) {
    for (int64_t k = 0; k < end - first; ++k) s.weight[k] /= total;
  }
}

// Whether the axis is read as a copy: asked for, or antialiased at the
// same size (torch from 2.x copies such an axis, whatever the scale; 1.13
// resamples it).
bool copies(const AxisResize& a) {
  return a.interpolation == Interpolation::copy || (a.antialias && a.out_size == a.in_size);
}

// The most inputs an output of the axis reads: one for a copy, 2 (linear)
// or 4 (cubic), antialiased fewer than 2 reach max(s, 1) + 2.
int64_t taps_stride(const AxisResize& a) {
  if (copies(a)) return 1;
  const int64_t reach = a.interpolation == Interpolation::linear ? 1 : 2;
  if (!a.antialias) return 2 * reach;
  return std::min<int64_t>(int64_t(2 * double(reach) * std::max(a.in_per_out, 1.0)) + 2,
                           a.in_size);
}

}  // namespace

size_t taps_bytes(const AxisResize& axis) {
  return size_t(axis.out_size) * (size_t(taps_stride(axis)) * 2 + 1) * sizeof(int64_t);
}

AxisTaps axis_taps(const AxisResize& a, void* memory) {
  const int64_t stride = taps_stride(a);
  auto* count = static_cast<int64_t*>(memory);
  auto* index = count + a.out_size;
  auto* weights = reinterpret_cast<double*>(index + a.out_size * stride);
  const AxisTaps taps{stride, count, index, weights};  // (slots past an output's count unused)
  const bool copy = copies(a);
  for (int64_t o = 0; o < a.out_size; ++o) {
    if (copy) {
      const Slots s = slots(taps, o, 1);
      s.index[0] = o;
      s.weight[0] = 1;
    } else if (a.antialias) {
      antialiased_taps(a.in_size, a.in_per_out, a.interpolation, o, taps);
    } else {
      interpolating_taps(a.in_size, a.out_size, a.in_per_out, a.interpolation, o, taps);
    }
  }
  return taps;
}

}  // namespace posenc::ops
