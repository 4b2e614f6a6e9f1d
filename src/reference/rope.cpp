#include "reference/rope.hpp"

#include <cmath>

namespace posenc::reference {

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
          if (r.grid_width > 0) position = j < pairs / 2 ? p / r.grid_width : p % r.grid_width;
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
