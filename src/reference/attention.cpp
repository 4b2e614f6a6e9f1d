#include "reference/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "ops/relative/relative_index.hpp"

namespace posenc::reference {
namespace {

// Element (b, h, t, c) of a [.., tokens, .., head_dim] tensor in a layout.
int64_t index_of(const posenc_attention_desc& d, int64_t tokens, int64_t b, int64_t h,
                 int64_t t, int64_t c) {
  if (d.layout == POSENC_LAYOUT_BTHD) return ((b * tokens + t) * d.heads + h) * d.head_dim + c;
  return ((b * d.heads + h) * tokens + t) * d.head_dim + c;
}

double dot(const double* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t c = 0; c < n; ++c) sum += a[c] * double(b[c]);
  return sum;
}

// q, k, v given as element getters (b, h, t, c) so that the bottleneck can
// feed its double projections.
using Getter = std::function<double(int64_t, int64_t, int64_t, int64_t)>;

// rows[t * head_dim + c] = x(b, h, t, c)
std::vector<double> head_rows(const Getter& x, int64_t b, int64_t h, int64_t tokens,
                              int64_t head_dim) {
  std::vector<double> rows(size_t(tokens * head_dim));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < head_dim; ++c) rows[size_t(t * head_dim + c)] = x(b, h, t, c);
  }
  return rows;
}

std::vector<double> attention_core(const posenc_attention_desc& d, const Getter& q,
                                   const Getter& k, const Getter& v, const AttentionInputs& in) {
  const int64_t dh = d.head_dim;
  const double alpha = d.bias_uses_scaled_q ? double(d.scale) : 1.0;
  const RelativeIndex relative =
      relative_index(d.query_offset, d.q_len, d.kv_len, d.max_distance);
  auto table_of = [&](const float* table, int64_t rows, int64_t h, int64_t row) {
    return table + ((d.tables_per_head ? h * rows : 0) + row) * dh;
  };
  std::vector<double> out(size_t(d.batch * d.heads * d.q_len * dh), 0.0);
  std::vector<double> scores(size_t(d.kv_len));
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.heads; ++h) {
      const std::vector<double> qs = head_rows(q, b, h, d.q_len, dh);
      const std::vector<double> ks = head_rows(k, b, h, d.kv_len, dh);
      const std::vector<double> vs = head_rows(v, b, h, d.kv_len, dh);
      for (int64_t i = 0; i < d.q_len; ++i) {
        const double* qi = &qs[size_t(i * dh)];
        int64_t visible = d.kv_len;
        if (d.causal) visible = std::clamp<int64_t>(d.query_offset + i + 1, 0, d.kv_len);
        if (visible == 0) continue;  // a fully masked row stays zero
        double max_score = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
          double s = 0.0;
          for (int64_t c = 0; c < dh; ++c) s += qi[c] * ks[size_t(j * dh + c)];
          s *= double(d.scale);
          double bias = 0.0;
          switch (d.bias) {
            case POSENC_BIAS_ABSOLUTE:
              bias = dot(qi, table_of(in.table, d.kv_len, h, j), dh);
              break;
            case POSENC_BIAS_RELATIVE_1D:
              bias = dot(qi, table_of(in.table, relative.rows, h, relative.row(i, j)), dh);
              break;
            case POSENC_BIAS_RELATIVE_2D: {
              const int64_t X = d.map_height, Y = d.map_width;
              const int64_t x1 = i / Y, y1 = i % Y, x2 = j / Y, y2 = j % Y;
              bias = dot(qi, table_of(in.table_h, 2 * X - 1, h, x2 - x1 + X - 1), dh) +
                     dot(qi, table_of(in.table_w, 2 * Y - 1, h, y2 - y1 + Y - 1), dh);
              break;
            }
            default:
              break;
          }
          scores[size_t(j)] = s + alpha * bias;
          max_score = std::max(max_score, scores[size_t(j)]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < visible; ++j) {
          scores[size_t(j)] = std::exp(scores[size_t(j)] - max_score);
          sum += scores[size_t(j)];
        }
        double* o = &out[size_t(index_of(d, d.q_len, b, h, i, 0))];
        for (int64_t j = 0; j < visible; ++j) {
          const double a = scores[size_t(j)] / sum;
          for (int64_t c = 0; c < dh; ++c) o[c] += a * vs[size_t(j * dh + c)];
          if (d.relative_values) {
            const float* rv = table_of(in.value_table, relative.rows, h, relative.row(i, j));
            for (int64_t c = 0; c < dh; ++c) o[c] += a * double(rv[c]);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<double> attention(const posenc_attention_desc& d, const AttentionInputs& in) {
  auto getter = [&d](const float* x, int64_t tokens) -> Getter {
    return [&d, x, tokens](int64_t b, int64_t h, int64_t t, int64_t c) {
      return double(x[index_of(d, tokens, b, h, t, c)]);
    };
  };
  return attention_core(d, getter(in.q, d.q_len), getter(in.k, d.kv_len),
                        getter(in.v, d.kv_len), in);
}

std::vector<double> bottleneck_mhsa(const posenc_bottleneck_desc& d, const float* fmap,
                                    const float* w_qkv, const float* qkv_bias,
                                    const float* rel_h, const float* rel_w) {
  const int64_t n = d.height * d.width, inner = d.heads * d.head_dim;
  // qkv[b][o][t] = sum_c W[o, c] fmap[b, c, t] + bias[o]
  std::vector<double> qkv(size_t(d.batch * 3 * inner * n), 0.0);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t o = 0; o < 3 * inner; ++o) {
      double* row = &qkv[size_t((b * 3 * inner + o) * n)];
      if (qkv_bias != nullptr) std::fill(row, row + n, double(qkv_bias[o]));
      for (int64_t c = 0; c < d.channels; ++c) {
        const double w = w_qkv[o * d.channels + c];
        const float* f = fmap + (b * d.channels + c) * n;
        for (int64_t t = 0; t < n; ++t) row[t] += w * double(f[t]);
      }
    }
  }
  auto part = [&](int64_t which) -> Getter {
    return [&, which](int64_t b, int64_t h, int64_t t, int64_t c) {
      return qkv[size_t((b * 3 * inner + which * inner + h * d.head_dim + c) * n + t)];
    };
  };
  posenc_attention_desc a;
  posenc_attention_desc_init(&a, d.batch, d.heads, n, n, d.head_dim);
  a.scale = d.scale;
  a.bias = POSENC_BIAS_RELATIVE_2D;
  a.map_height = d.height;
  a.map_width = d.width;
  a.tables_per_head = d.tables_per_head;
  a.bias_uses_scaled_q = d.bias_uses_scaled_q;
  AttentionInputs in{};
  in.table_h = rel_h;
  in.table_w = rel_w;
  const std::vector<double> tokens = attention_core(a, part(0), part(1), part(2), in);
  // [b, h, (x, y), c] to [b, h*dh + c, (x / s, y / s)], the mean of each s x s
  // window (AvgPool2d(s, s): the last row and column of an odd map dropped).
  const int64_t s = d.stride, out_h = d.height / s, out_w = d.width / s;
  std::vector<double> out(size_t(d.batch * inner * out_h * out_w), 0.0);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t x = 0; x < out_h * s; ++x) {
        for (int64_t y = 0; y < out_w * s; ++y) {
          const int64_t t = x * d.width + y, pooled = x / s * out_w + y / s;
          for (int64_t c = 0; c < d.head_dim; ++c) {
            out[size_t((b * inner + h * d.head_dim + c) * out_h * out_w + pooled)] +=
                tokens[size_t(((b * d.heads + h) * n + t) * d.head_dim + c)] / double(s * s);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace posenc::reference
