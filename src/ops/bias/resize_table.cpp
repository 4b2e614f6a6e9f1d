#include "ops/bias/resize_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace posenc::ops {
namespace {

// The source coordinate of output index `dst` with align_corners=False
// (torch's area_pixel_compute_source_index): (dst + 0.5) * in/out - 0.5.
double source_coordinate(int64_t in_size, int64_t out_size, int64_t dst) {
  return (double(dst) + 0.5) * double(in_size) / double(out_size) - 0.5;
}

// Keys' cubic convolution weights (A = -0.75) of the 4 inputs around a source
// coordinate t past its floor: at distances 1 + t, t, 1 - t and 2 - t.
std::array<double, 4> cubic_weights(double t) {
  constexpr double A = -0.75;
  // |x| <= 1 and 1 < |x| < 2.
  const auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  const auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// The 4 source indices and weights along one axis for output index dst,
// indices clamped to [0, in_size).
struct CubicTaps {
  std::array<int64_t, 4> index;
  std::array<double, 4> weight;
};
CubicTaps cubic_taps(int64_t in_size, int64_t out_size, int64_t dst) {
  const double s = source_coordinate(in_size, out_size, dst);
  const double floor_s = std::floor(s);
  CubicTaps taps{{}, cubic_weights(s - floor_s)};
  for (int64_t k = 0; k < 4; ++k) {
    taps.index[size_t(k)] = std::clamp<int64_t>(int64_t(floor_s) - 1 + k, 0, in_size - 1);
  }
  return taps;
}

}  // namespace

void resize_rows_linear(int64_t rows, int64_t dim, const float* in, int64_t new_rows,
                        float* out) {
  for (int64_t r = 0; r < new_rows; ++r) {
    const double s = std::max(source_coordinate(rows, new_rows, r), 0.0);
    const int64_t r0 = int64_t(s);
    const int64_t r1 = r0 < rows - 1 ? r0 + 1 : r0;
    const double w1 = s - double(r0), w0 = 1 - w1;
    const float* a = in + r0 * dim;
    const float* b = in + r1 * dim;
    for (int64_t c = 0; c < dim; ++c) out[r * dim + c] = float(a[c] * w0 + b[c] * w1);
  }
}

void resize_bias_table_2d(int64_t heads, const Window2d& from, const Window2d& to,
                          const float* in, float* out) {
  const int64_t in_h = 2 * from.height - 1, in_w = 2 * from.width - 1;
  const int64_t out_h = 2 * to.height - 1, out_w = 2 * to.width - 1;
  // Rows of the table are grid cells y * width + x; heads are its columns.
  for (int64_t y = 0; y < out_h; ++y) {
    const CubicTaps ty = cubic_taps(in_h, out_h, y);
    for (int64_t x = 0; x < out_w; ++x) {
      const CubicTaps tx = cubic_taps(in_w, out_w, x);
      for (int64_t h = 0; h < heads; ++h) {
        double sum = 0;  // over y of w_y * (over x of w_x * value)
        for (size_t a = 0; a < 4; ++a) {
          const float* line = in + ty.index[a] * in_w * heads + h;
          double inner = 0;
          for (size_t b = 0; b < 4; ++b) inner += line[tx.index[b] * heads] * tx.weight[b];
          sum += inner * ty.weight[a];
        }
        out[(y * out_w + x) * heads + h] = float(sum);
      }
    }
  }
  const int64_t extra = from.table_rows() - from.relative_rows();  // BEiT's class-token rows
  std::copy_n(in + from.relative_rows() * heads, extra * heads,
              out + to.relative_rows() * heads);
}

}  // namespace posenc::ops
