#include "reference/absolute.hpp"

#include <algorithm>
#include <cmath>

#include "reference/interpolation.hpp"

namespace posenc::reference {

namespace {

// One value of the sinusoid: column `column` of position `position`.
double sinusoid_value(int64_t position, int64_t column, int64_t dim, double base,
                      posenc_sincos_layout layout) {
  const int64_t sin_count = (dim + 1) / 2;
  int64_t frequency;
  bool is_sine;
  if (layout == POSENC_SINCOS_SPLIT) {
    is_sine = column < sin_count;
    frequency = is_sine ? column : column - sin_count;
  } else {
    is_sine = column % 2 == 0;
    frequency = column / 2;
  }
  const double angle = double(position) * std::pow(base, -double(2 * frequency) / double(dim));
  return is_sine ? std::sin(angle) : std::cos(angle);
}

}  // namespace

std::vector<double> sinusoid_table(int64_t length, int64_t dim, int64_t start, double base,
                                   posenc_sincos_layout layout) {
  std::vector<double> out(size_t(length * dim));
  for (int64_t k = 0; k < length; ++k) {
    for (int64_t c = 0; c < dim; ++c) {
      out[size_t(k * dim + c)] = sinusoid_value(start + k, c, dim, base, layout);
    }
  }
  return out;
}

std::vector<double> sinusoid_table_2d(int64_t height, int64_t width, int64_t dim, double base,
                                      posenc_sincos_layout layout) {
  const int64_t half = dim / 2;
  std::vector<double> out(size_t(height * width * dim));
  for (int64_t x = 0; x < height; ++x) {
    for (int64_t y = 0; y < width; ++y) {
      double* row = &out[size_t((x * width + y) * dim)];
      for (int64_t c = 0; c < half; ++c) {
        row[c] = sinusoid_value(x, c, half, base, layout);
        row[half + c] = sinusoid_value(y, c, half, base, layout);
      }
    }
  }
  return out;
}

std::vector<double> add_sinusoid(int64_t batch, int64_t tokens, int64_t dim, int64_t offset,
                                 double base, posenc_sincos_layout layout, const float* x) {
  std::vector<double> out(size_t(batch * tokens * dim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < dim; ++c) {
        const size_t i = size_t((b * tokens + t) * dim + c);
        out[i] = double(x[i]) + sinusoid_value(offset + t, c, dim, base, layout);
      }
    }
  }
  return out;
}

std::vector<double> add_learned(int64_t batch, int64_t tokens, int64_t dim, int64_t offset,
                                const float* table, const float* x) {
  std::vector<double> out(size_t(batch * tokens * dim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < dim; ++c) {
        const size_t i = size_t((b * tokens + t) * dim + c);
        out[i] = double(x[i]) + double(table[(offset + t) * dim + c]);
      }
    }
  }
  return out;
}

std::vector<double> concat_sinusoid(int64_t batch, int64_t tokens, int64_t x_dim,
                                    int64_t pos_dim, int64_t offset, double base,
                                    posenc_sincos_layout layout, const float* x) {
  const int64_t out_dim = x_dim + pos_dim;
  std::vector<double> out(size_t(batch * tokens * out_dim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      double* row = &out[size_t((b * tokens + t) * out_dim)];
      for (int64_t c = 0; c < x_dim; ++c) row[c] = x[(b * tokens + t) * x_dim + c];
      for (int64_t c = 0; c < pos_dim; ++c) {
        row[x_dim + c] = sinusoid_value(offset + t, c, pos_dim, base, layout);
      }
    }
  }
  return out;
}

namespace {

// weights[o][i]: how much input i of n counts in output o of m along one
// axis, s inputs per output.
std::vector<std::vector<double>> axis_weights(int64_t n, int64_t m, double s, bool cubic,
                                              bool antialias) {
  std::vector<std::vector<double>> weights(size_t(m), std::vector<double>(size_t(n), 0.0));
  const auto clamped = [n](int64_t i) { return size_t(std::clamp<int64_t>(i, 0, n - 1)); };
  for (int64_t o = 0; o < m; ++o) {
    std::vector<double>& w = weights[size_t(o)];
    if (m == n && (!cubic || antialias)) {
      w[size_t(o)] = 1;  // an axis of the same size copied, whatever the scale
    } else if (antialias) {
      const double stretch = std::max(s, 1.0);
      const double center = (double(o) + 0.5) * s, support = (cubic ? 2 : 1) * stretch;
      double total = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (i < int64_t(center - support + 0.5) || i >= int64_t(center + support + 0.5)) continue;
        const double x = (double(i) - center + 0.5) / stretch;
        w[size_t(i)] = cubic ? keys_kernel(x, -0.5) : std::max(1 - std::fabs(x), 0.0);
        total += w[size_t(i)];
      }
      for (double& v : w) v /= total;
    } else {
      double u = (double(o) + 0.5) * s - 0.5;
      if (!cubic) u = std::max(u, 0.0);
      const int64_t i0 = std::min(int64_t(std::floor(u)), n - 1);
      const double f = std::clamp(u - double(i0), 0.0, 1.0);
      if (cubic) {
        for (int64_t k = -1; k <= 2; ++k) w[clamped(i0 + k)] += keys_kernel(f - double(k), -0.75);
      } else {
        w[clamped(i0)] += 1 - f;
        w[clamped(i0 + 1)] += f;
      }
    }
  }
  return weights;
}

}  // namespace

std::vector<double> resize_absolute_table_2d(const posenc_absolute_resize_desc& desc,
                                             const float* in) {
  const int64_t p = desc.prefix_tokens, dim = desc.dim;
  const int64_t h = desc.height, w = desc.width, nh = desc.new_height, nw = desc.new_width;
  const bool cubic = desc.interpolation == POSENC_INTERPOLATION_BICUBIC;
  const bool antialias = desc.antialias != 0;
  const auto ratio = [](int64_t n, int64_t m, double scale) {
    return scale > 0 ? 1 / scale : double(n) / double(m);
  };
  const auto wy = axis_weights(h, nh, ratio(h, nh, desc.height_scale), cubic, antialias);
  const auto wx = axis_weights(w, nw, ratio(w, nw, desc.width_scale), cubic, antialias);
  std::vector<double> out(size_t((p + nh * nw) * dim), 0.0);
  for (int64_t i = 0; i < p * dim; ++i) out[size_t(i)] = in[i];
  for (int64_t y = 0; y < nh; ++y) {
    for (int64_t x = 0; x < nw; ++x) {
      double* cell = out.data() + (p + y * nw + x) * dim;
      for (int64_t a = 0; a < h; ++a) {
        for (int64_t b = 0; b < w; ++b) {
          const double weight = wy[size_t(y)][size_t(a)] * wx[size_t(x)][size_t(b)];
          if (weight == 0) continue;
          const float* source = in + (p + a * w + b) * dim;
          for (int64_t c = 0; c < dim; ++c) cell[c] += weight * source[c];
        }
      }
    }
  }
  return out;
}

}  // namespace posenc::reference
