#include "reference/rope.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace posenc::reference {
namespace {

constexpr double kPi = 3.141592653589793238462643383279;

}  // namespace

std::vector<double> rope_inverse_frequencies(const posenc_rope_config& c,
                                             double* attention_factor) {
  const int64_t dim = c.grid_width > 0 ? c.rotary_dim / 2 : c.rotary_dim;
  const double s = c.factor, context = double(c.original_max_positions);
  std::vector<double> axis;
  for (int64_t j = 0; j < dim / 2; ++j) {
    double theta = c.base;
    if (c.scaling == POSENC_ROPE_SCALING_DYNAMIC_NTK) {
      const double length = std::max(double(c.sequence_length), context);
      theta *= std::pow(s * length / context - (s - 1.0), double(dim) / double(dim - 2));
    }
    double w = 1.0 / std::pow(theta, double(2 * j) / double(dim));
    if (c.scaling == POSENC_ROPE_SCALING_LINEAR) w /= s;
    if (c.scaling == POSENC_ROPE_SCALING_YARN) {
      auto corr = [&](double rotations) {
        return double(dim) * std::log(context / (rotations * 2.0 * kPi)) / (2.0 * std::log(c.base));
      };
      const bool rounded = c.fractional_correction_range == 0;
      const double fast = corr(c.beta_fast), slow = corr(c.beta_slow);
      const double lo = std::max(rounded ? std::floor(fast) : fast, 0.0);
      double hi = std::min(rounded ? std::ceil(slow) : slow, double(dim - 1));
      if (hi == lo) hi += 0.001;
      const double ramp = std::min(1.0, std::max(0.0, (double(j) - lo) / (hi - lo)));
      const double e = (1.0 - ramp) * c.extrapolation_factor;
      w = w / s * (1.0 - e) + w * e;
    }
    if (c.scaling == POSENC_ROPE_SCALING_LLAMA3) {
      const double wavelength = 2.0 * kPi / w;
      if (wavelength > context / c.low_freq_factor) {
        w /= s;
      } else if (wavelength >= context / c.high_freq_factor) {
        const double g =
            (context / wavelength - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
        w = (1.0 - g) * w / s + g * w;
      }
    }
    axis.push_back(w);
  }
  *attention_factor = 1.0;
  if (c.scaling == POSENC_ROPE_SCALING_YARN && c.attention_factor > 0.0) {
    *attention_factor = c.attention_factor;
  } else if (c.scaling == POSENC_ROPE_SCALING_YARN && s > 1.0 && c.extrapolation_factor > 0.0) {
    *attention_factor = 0.1 * std::log(s) + 1.0;
  }
  std::vector<double> per_pair(size_t(c.rotary_dim / 2));
  for (size_t j = 0; j < per_pair.size(); ++j) per_pair[j] = axis[j % axis.size()];
  return per_pair;
}

RopeReference rope_reference(const posenc_rope_config& c, posenc_rope_layout layout,
                             int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim,
                             std::vector<int64_t> positions) {
  RopeReference r{c.pairing, c.rotary_dim, c.grid_width, c.column_first != 0, {}, 1.0, layout,
                  batch, tokens, heads, head_dim, std::move(positions)};
  r.inv_freq = rope_inverse_frequencies(c, &r.attention_factor);
  return r;
}

std::vector<double> rope(const RopeReference& r, const float* x) {
  const int64_t pairs = r.rotary_dim / 2;
  std::vector<double> out(size_t(r.batch * r.tokens * r.heads * r.head_dim));
  for (int64_t b = 0; b < r.batch; ++b) {
    for (int64_t t = 0; t < r.tokens; ++t) {
      const int64_t p = r.positions[size_t(b * r.tokens + t)];
      for (int64_t h = 0; h < r.heads; ++h) {
        const int64_t vector = r.layout == POSENC_ROPE_BTHD ? (b * r.tokens + t) * r.heads + h
                                                            : (b * r.heads + h) * r.tokens + t;
        const float* in = x + vector * r.head_dim;
        double* o = out.data() + vector * r.head_dim;
        for (int64_t i = 0; i < r.head_dim; ++i) o[i] = in[i];
        for (int64_t j = 0; j < pairs; ++j) {
          int64_t position = p;
          if (r.grid_width > 0) {
            const bool by_column = (j < pairs / 2) == r.column_first;
            position = by_column ? p % r.grid_width : p / r.grid_width;
          }
          const double angle = double(position) * r.inv_freq[size_t(j)];
          const double c = r.attention_factor * std::cos(angle);
          const double s = r.attention_factor * std::sin(angle);
          const int64_t i0 = r.pairing == POSENC_ROPE_INTERLEAVED ? 2 * j : j;
          const int64_t i1 = r.pairing == POSENC_ROPE_INTERLEAVED ? 2 * j + 1 : j + pairs;
          o[i0] = double(in[i0]) * c - double(in[i1]) * s;
          o[i1] = double(in[i1]) * c + double(in[i0]) * s;
        }
      }
    }
  }
  return out;
}

}  // namespace posenc::reference
