#include "reference/absolute.hpp"

#include <cmath>

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

}  // namespace posenc::reference
