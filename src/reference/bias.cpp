#include "reference/bias.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "reference/interpolation.hpp"

namespace posenc::reference {

std::vector<int64_t> swin_relative_position_index(int64_t height, int64_t width,
                                                  bool class_token) {
  const int64_t cells = height * width;
  std::vector<int64_t> coord_y(static_cast<size_t>(cells)), coord_x(static_cast<size_t>(cells));
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      coord_y[size_t(y * width + x)] = y;
      coord_x[size_t(y * width + x)] = x;
    }
  }
  const int64_t offset = class_token ? 1 : 0, n = cells + offset;
  std::vector<int64_t> index(size_t(n * n), 0);
  for (int64_t a = 0; a < cells; ++a) {
    for (int64_t b = 0; b < cells; ++b) {
      const int64_t dy = coord_y[size_t(a)] - coord_y[size_t(b)] + height - 1;
      const int64_t dx = coord_x[size_t(a)] - coord_x[size_t(b)] + width - 1;
      index[size_t((a + offset) * n + b + offset)] = dy * (2 * width - 1) + dx;
    }
  }
  if (class_token) {
    const int64_t l = (2 * height - 1) * (2 * width - 1);
    for (int64_t j = 0; j < n; ++j) index[size_t(j)] = l;          // row 0
    for (int64_t i = 0; i < n; ++i) index[size_t(i * n)] = l + 1;  // column 0
    index[0] = l + 2;
  }
  return index;
}

int64_t t5_relative_position_bucket(int64_t relative_position, bool bidirectional,
                                    int64_t num_buckets, int64_t max_distance) {
  int64_t relative_buckets = 0;
  if (bidirectional) {
    num_buckets /= 2;
    relative_buckets += relative_position > 0 ? num_buckets : 0;
    relative_position = std::llabs(relative_position);
  } else {
    relative_position = -std::min<int64_t>(relative_position, 0);
  }
  const int64_t max_exact = num_buckets / 2;
  if (relative_position < max_exact) return relative_buckets + relative_position;
  // The model's float32 tensor arithmetic, its log correctly rounded (x86's
  // 80-bit or aarch64's 128-bit long double log, rounded; where long double
  // is double it is the op's); the Python float log ratio is a double
  // rounded to float32 when it meets the tensor.
  const float position = float(relative_position);
  const float logarithm = float(std::log(static_cast<long double>(position / float(max_exact))));
  const float scaled = logarithm / float(std::log(double(max_distance) / double(max_exact))) *
                       float(num_buckets - max_exact);
  const int64_t if_large = std::min<int64_t>(max_exact + int64_t(scaled), num_buckets - 1);
  return relative_buckets + if_large;
}

std::vector<double> alibi_slopes(int64_t heads) {
  const double closest = std::exp2(std::floor(std::log2(double(heads))));
  const double base = std::exp2(-std::exp2(-(std::log2(closest) - 3)));
  std::vector<double> slopes;
  for (int64_t k = 1; k <= int64_t(closest); ++k) slopes.push_back(std::pow(base, double(k)));
  if (int64_t(closest) != heads) {
    const double extra_base = std::exp2(-std::exp2(-(std::log2(2 * closest) - 3)));
    const int64_t remaining = std::min(int64_t(closest), heads - int64_t(closest));
    for (int64_t k = 1; k < 1 + 2 * remaining; k += 2) {
      slopes.push_back(std::pow(extra_base, double(k)));
    }
  }
  return slopes;
}

std::vector<double> position_bias(const posenc_position_bias_desc& d, const float* table) {
  const int64_t heads = d.heads, q_len = d.q_len, kv_len = d.kv_len;
  std::vector<double> out(size_t(heads * q_len * kv_len));
  std::vector<int64_t> index;
  if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
    index = swin_relative_position_index(d.window_height, d.window_width, d.class_token != 0);
  }
  std::vector<double> slopes;
  if (d.kind == POSENC_POSITION_BIAS_ALIBI) {
    slopes = table ? std::vector<double>(table, table + heads) : alibi_slopes(heads);
  }
  const int64_t k = d.max_distance;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < q_len; ++i) {
      for (int64_t j = 0; j < kv_len; ++j) {
        const int64_t distance = j - (d.query_offset + i);
        double value = 0;
        switch (d.kind) {
          case POSENC_POSITION_BIAS_TABLE_2D:
            value = table[index[size_t(i * kv_len + j)] * heads + h];
            break;
          case POSENC_POSITION_BIAS_TABLE_1D:
            value = table[h * (2 * k + 1) + std::clamp(distance, -k, k) + k];
            break;
          case POSENC_POSITION_BIAS_T5:
            value = table[t5_relative_position_bucket(distance, d.bidirectional != 0,
                                                      d.num_buckets, d.max_distance) *
                              heads +
                          h];
            break;
          default:
            value = d.bidirectional ? -slopes[size_t(h)] * double(std::llabs(distance))
                                    : slopes[size_t(h)] * double(distance);
        }
        out[size_t((h * q_len + i) * kv_len + j)] = value;
      }
    }
  }
  return out;
}

std::vector<double> resize_rows_linear(int64_t rows, int64_t dim, const float* in,
                                       int64_t new_rows) {
  std::vector<double> out(size_t(new_rows * dim));
  for (int64_t r = 0; r < new_rows; ++r) {
    const double source = std::max((r + 0.5) * double(rows) / double(new_rows) - 0.5, 0.0);
    const int64_t below = std::min(int64_t(std::floor(source)), rows - 1);
    const int64_t above = std::min(below + 1, rows - 1);
    const double t = source - double(below);
    for (int64_t c = 0; c < dim; ++c) {
      out[size_t(r * dim + c)] = (1 - t) * in[below * dim + c] + t * in[above * dim + c];
    }
  }
  return out;
}

std::vector<double> resize_bias_table_2d(int64_t heads, int64_t height, int64_t width,
                                         int64_t new_height, int64_t new_width,
                                         bool class_token, const float* in) {
  const int64_t in_h = 2 * height - 1, in_w = 2 * width - 1;
  const int64_t out_h = 2 * new_height - 1, out_w = 2 * new_width - 1;
  const int64_t extra = class_token ? 3 : 0;
  std::vector<double> out(size_t((out_h * out_w + extra) * heads));
  for (int64_t y = 0; y < out_h; ++y) {
    const double sy = (y + 0.5) * double(in_h) / double(out_h) - 0.5;
    for (int64_t x = 0; x < out_w; ++x) {
      const double sx = (x + 0.5) * double(in_w) / double(out_w) - 0.5;
      for (int64_t h = 0; h < heads; ++h) {
        double sum = 0;
        // The 4 x 4 source cells around (sy, sx), read at clamped indices.
        for (int64_t a = int64_t(std::floor(sy)) - 1; a <= int64_t(std::floor(sy)) + 2; ++a) {
          for (int64_t b = int64_t(std::floor(sx)) - 1; b <= int64_t(std::floor(sx)) + 2; ++b) {
            const int64_t cy = std::clamp<int64_t>(a, 0, in_h - 1);
            const int64_t cx = std::clamp<int64_t>(b, 0, in_w - 1);
            sum += keys_kernel(sy - double(a), -0.75) * keys_kernel(sx - double(b), -0.75) *
                   in[(cy * in_w + cx) * heads + h];
          }
        }
        out[size_t((y * out_w + x) * heads + h)] = sum;
      }
    }
  }
  for (int64_t e = 0; e < extra * heads; ++e) {
    out[size_t(out_h * out_w * heads + e)] = in[in_h * in_w * heads + e];
  }
  return out;
}

}  // namespace posenc::reference
