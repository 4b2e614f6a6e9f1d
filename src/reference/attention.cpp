#include "reference/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/bias/attention_bias_desc.hpp"
#include "reference/bias.hpp"
#include "reference/relative.hpp"

namespace posenc::reference {
namespace {

double dot(const double* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t c = 0; c < n; ++c) sum += a[c] * double(b[c]);
  return sum;
}

// A tensor's elements as doubles, dense [batch, heads, tokens, row]: q, k
// and v read from the desc's layout, or the bottleneck's double projections.
struct HeadRows {
  std::vector<double> values;
  int64_t heads, tokens, row;
  // Head h of batch b: rows[t * row + c].
  const double* at(int64_t b, int64_t h) const {
    return values.data() + size_t((b * heads + h) * tokens * row);
  }
};

// Rows of `heads` heads and `tokens` tokens of `row` elements, element
// (b, h, t, c) given by element(b, h, t, c).
template <class Element>
HeadRows head_rows(int64_t batch, int64_t heads, int64_t tokens, int64_t row,
                   const Element& element) {
  HeadRows rows{std::vector<double>(size_t(batch * heads * tokens * row)), heads, tokens, row};
  double* out = rows.values.data();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t c = 0; c < row; ++c) *out++ = element(b, h, t, c);
      }
    }
  }
  return rows;
}

// x read in the desc's layout (STRIDED: by `strides`).
HeadRows head_rows(const posenc_attention_desc& d, const float* x,
                   const posenc_token_strides& strides, int64_t heads, int64_t tokens,
                   int64_t row) {
  return head_rows(d.batch, heads, tokens, row, [&](int64_t b, int64_t h, int64_t t, int64_t c) {
    return double(x[index_of(d, strides, heads, tokens, b, h, t, c, row)]);
  });
}

// The bias kinds without q (posenc/bias.h's), NONE for the others.
bool has_position_bias(const posenc_attention_desc& d) {
  return d.bias == POSENC_BIAS_TABLE_2D || d.bias == POSENC_BIAS_TABLE_1D ||
         d.bias == POSENC_BIAS_T5 || d.bias == POSENC_BIAS_ALIBI;
}

// The dense bias [heads, q_len, kv_len] of such a kind for queries starting
// at query_offset, by posenc/bias.h's reference.
std::vector<double> dense_position_bias(const posenc_attention_desc& d, const float* table,
                                        int64_t query_offset) {
  return position_bias(ops::position_bias_desc_of(d, query_offset), table);
}

// DISENTANGLED's S: its tables have 2S rows.
int64_t disentangled_span(const posenc_attention_desc& d) {
  return d.num_buckets > 0 ? d.num_buckets : d.max_distance;
}

// value_magnitudes: |value_table|'s rows in place of value_table's (v is the
// caller's).
std::vector<double> attention_core(const posenc_attention_desc& d, const HeadRows& q,
                                   const HeadRows& k, const HeadRows& v, const AttentionInputs& in,
                                   bool value_magnitudes = false) {
  const int64_t dh = d.head_dim, dv = value_head_dim_of(d);
  const double alpha = d.bias_uses_scaled_q ? double(d.scale) : 1.0;
  int64_t max_offset = d.query_offset;
  if (in.query_offsets != nullptr) {
    max_offset = *std::max_element(in.query_offsets, in.query_offsets + d.batch);
  }
  const int64_t table_rows = table_rows_1d(max_offset, d.q_len, d.kv_len, d.max_distance);
  // RELATIVE_2D's axes: the key map is the query map's without kv_map_*.
  const bool query_minus_key = d.relative_order == POSENC_RELATIVE_QUERY_MINUS_KEY;
  const Axis2d axis_h{d.map_height, d.kv_map_height ? d.kv_map_height : d.map_height,
                      query_minus_key};
  const Axis2d axis_w{d.map_width, d.kv_map_width ? d.kv_map_width : d.map_width, query_minus_key};
  auto table_of = [&](const float* table, int64_t rows, int64_t h, int64_t row,
                      int64_t columns) {
    return table + ((d.tables_per_head ? h * rows : 0) + row) * columns;
  };
  // The mask's entry for (b, h, i, j): batch b % mask_batch, head and
  // query 0 where the mask has one of them.
  auto mask_of = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    if (d.mask_batch == 0) return 0.0;
    const int64_t row = ((b % d.mask_batch) * d.mask_heads + (d.mask_heads == 1 ? 0 : h)) *
                            d.mask_q_len +
                        (d.mask_q_len == 1 ? 0 : i);
    return double(in.mask[row * d.kv_len + j]);
  };
  std::vector<double> out(size_t(d.batch * d.heads * d.q_len * dv), 0.0);
  std::vector<double> scores(size_t(d.kv_len));
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t kv_length = in.kv_lengths ? in.kv_lengths[b] : d.kv_len;
    const int64_t q_length = in.q_lengths ? in.q_lengths[b] : d.q_len;
    const int64_t offset = in.query_offsets ? in.query_offsets[b] : d.query_offset;
    const auto relative_row = [&](int64_t i, int64_t j) {
      return table_row_1d(offset, d.q_len, d.max_distance, i, j);
    };
    // The bias of the kinds without q, in softmax-input units like the mask.
    const std::vector<double> position =
        has_position_bias(d) ? dense_position_bias(d, in.table, offset) : std::vector<double>();
    for (int64_t h = 0; h < d.heads; ++h) {
      const int64_t kv_head = h / (d.heads / kv_heads_of(d));
      const double* qs = q.at(b, h);
      const double* ks = k.at(b, kv_head);
      const double* vs = v.at(b, kv_head);
      for (int64_t i = 0; i < q_length; ++i) {  // later rows stay zero
        const double* qi = &qs[size_t(i * dh)];
        const auto [first, visible] = visible_keys(d, offset + i, kv_length);
        if (first >= visible) continue;  // a fully masked row stays zero
        // The head's sink, a logit with a value of zero, takes part in the
        // softmax as one more key.
        const double sink = d.sinks ? double(in.sinks[h]) : 0.0;
        double max_score = d.sinks ? sink : -std::numeric_limits<double>::infinity();
        for (int64_t j = first; j < visible; ++j) {
          double s = 0.0;
          for (int64_t c = 0; c < dh; ++c) s += qi[c] * ks[size_t(j * dh + c)];
          s *= double(d.scale);
          if (d.softcap > 0) s = double(d.softcap) * std::tanh(s / double(d.softcap));
          double bias = 0.0;
          switch (d.bias) {
            case POSENC_BIAS_ABSOLUTE:
              bias = dot(qi, table_of(in.table, d.kv_len, h, j, dh), dh);
              break;
            case POSENC_BIAS_RELATIVE_1D: {
              const float* row = table_of(in.table, table_rows, h, relative_row(i, j), dh);
              bias = dot(qi, row, dh);
              if (d.relative_query_bias) {  // (q_i + u_h) . R[row]
                const float* u = &in.relative_query_bias[size_t(h * dh)];
                for (int64_t c = 0; c < dh; ++c) bias += double(u[c]) * double(row[c]);
              }
              break;
            }
            case POSENC_BIAS_DISENTANGLED: {
              const int64_t row = disentangled_row(d, offset + i - j);
              bias = dot(qi, table_of(in.table, 2 * disentangled_span(d), h, row, dh), dh);
              const float* rk = table_of(in.key_table, 2 * disentangled_span(d), h, row, dh);
              for (int64_t c = 0; c < dh; ++c) bias += ks[size_t(j * dh + c)] * double(rk[c]);
              break;
            }
            case POSENC_BIAS_RELATIVE_2D: {
              // Query (x1, y1) of the X x Y map, key (x2, y2) of the X' x Y' one.
              const int64_t Y = d.map_width, Y2 = axis_w.k;
              const int64_t x1 = i / Y, y1 = i % Y, x2 = j / Y2, y2 = j % Y2;
              bias = dot(qi, table_of(in.table_h, axis_h.rows(), h, axis_h.row(x1, x2), dh), dh) +
                     dot(qi, table_of(in.table_w, axis_w.rows(), h, axis_w.row(y1, y2), dh), dh);
              break;
            }
            default:
              break;
          }
          double no_q =
              position.empty() ? 0.0 : position[size_t((h * d.q_len + i) * d.kv_len + j)];
          if (d.bias_gate) no_q *= double(in.bias_gate[size_t((b * d.heads + h) * d.q_len + i)]);
          scores[size_t(j)] = s + alpha * bias + no_q + mask_of(b, h, i, j);
          max_score = std::max(max_score, scores[size_t(j)]);
        }
        const auto masked = [](double s) { return s == -std::numeric_limits<double>::infinity(); };
        if (std::all_of(&scores[size_t(first)], &scores[size_t(visible)], masked)) {
          continue;  // stays zero
        }
        double sum = d.sinks ? std::exp(sink - max_score) : 0.0;
        for (int64_t j = first; j < visible; ++j) {
          scores[size_t(j)] = std::exp(scores[size_t(j)] - max_score);
          sum += scores[size_t(j)];
        }
        // STRIDED outputs are given densely, [batch, heads, q_len, value_head_dim].
        const int64_t o_index = d.layout == POSENC_LAYOUT_STRIDED
                                    ? ((b * d.heads + h) * d.q_len + i) * dv
                                    : index_of(d, {}, d.heads, d.q_len, b, h, i, 0, dv);
        double* o = &out[size_t(o_index)];
        for (int64_t j = first; j < visible; ++j) {
          const double a = scores[size_t(j)] / sum;
          for (int64_t c = 0; c < dv; ++c) o[c] += a * vs[size_t(j * dv + c)];
          if (d.relative_values) {
            const float* rv = table_of(in.value_table, table_rows, h, relative_row(i, j), dv);
            for (int64_t c = 0; c < dv; ++c) {
              o[c] += a * (value_magnitudes ? std::fabs(double(rv[c])) : double(rv[c]));
            }
          }
        }
      }
    }
  }
  return out;
}

// q, k and v read in the desc's layout; value_magnitudes: |v| and
// |value_table| in place of v and value_table.
std::vector<double> attention_of_layout(const posenc_attention_desc& d, const AttentionInputs& in,
                                        bool value_magnitudes) {
  const int64_t kv_heads = kv_heads_of(d);
  HeadRows v = head_rows(d, in.v, d.v_strides, kv_heads, d.kv_len, value_head_dim_of(d));
  if (value_magnitudes) {
    for (double& value : v.values) value = std::fabs(value);
  }
  return attention_core(d, head_rows(d, in.q, d.q_strides, d.heads, d.q_len, d.head_dim),
                        head_rows(d, in.k, d.k_strides, kv_heads, d.kv_len, d.head_dim), v, in,
                        value_magnitudes);
}

}  // namespace

int64_t index_of(const posenc_attention_desc& d, const posenc_token_strides& strides,
                 int64_t heads, int64_t tokens, int64_t b, int64_t h, int64_t t, int64_t c,
                 int64_t row_size) {
  const int64_t row = row_size == 0 ? d.head_dim : row_size;
  switch (d.layout) {
    case POSENC_LAYOUT_BTHD:
      return ((b * tokens + t) * heads + h) * row + c;
    case POSENC_LAYOUT_STRIDED:
      return b * strides.batch + h * strides.head + t * strides.token + c;
    default:
      return ((b * heads + h) * tokens + t) * row + c;
  }
}

int64_t extent_of(const posenc_attention_desc& d, const posenc_token_strides& strides,
                  int64_t heads, int64_t tokens, int64_t row_size) {
  const int64_t row = row_size == 0 ? d.head_dim : row_size;
  return index_of(d, strides, heads, tokens, d.batch - 1, heads - 1, tokens - 1, row - 1, row) +
         1;
}

VisibleKeys visible_keys(const posenc_attention_desc& d, int64_t position, int64_t kv_length) {
  const int64_t W = d.sliding_window;
  // (W is compared first: position - W and position + W may overflow.)
  const int64_t first = W > 0 && W <= position ? std::min(position - W + 1, kv_length) : 0;
  int64_t end = kv_length;
  if (d.causal) {
    end = std::clamp<int64_t>(position + 1, 0, kv_length);
  } else if (W > 0 && W < kv_length - position) {
    end = std::max<int64_t>(position + W, 0);
  }
  return VisibleKeys{first, end};
}

int64_t kv_heads_of(const posenc_attention_desc& d) {
  return d.kv_heads == 0 ? d.heads : d.kv_heads;
}

int64_t value_head_dim_of(const posenc_attention_desc& d) {
  return d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
}

std::vector<double> attention(const posenc_attention_desc& d, const AttentionInputs& in) {
  return attention_of_layout(d, in, false);
}

std::vector<double> attention_value_magnitudes(const posenc_attention_desc& d,
                                               const AttentionInputs& in) {
  return attention_of_layout(d, in, true);
}

std::vector<double> bottleneck_mhsa(const posenc_bottleneck_desc& d, const float* fmap,
                                    const float* w_qkv, const float* qkv_bias,
                                    const float* rel_h, const float* rel_w) {
  // timm's split of the qkv channels: q [0, qk), k [qk, 2 qk), v [2 qk, 2 qk
  // + inner) with qk = heads*head_dim and inner = heads*value_head_dim; head
  // h's column c at channel h*head_dim + c (v: h*value_head_dim + c).
  const int64_t dv = d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
  const int64_t n = d.height * d.width, qk = d.heads * d.head_dim, inner = d.heads * dv;
  const int64_t channels = 2 * qk + inner;
  // qkv[b][o][t] = sum_c W[o, c] fmap[b, c, t] + bias[o]
  std::vector<double> qkv(size_t(d.batch * channels * n), 0.0);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t o = 0; o < channels; ++o) {
      double* row = &qkv[size_t((b * channels + o) * n)];
      if (qkv_bias != nullptr) std::fill(row, row + n, double(qkv_bias[o]));
      for (int64_t c = 0; c < d.channels; ++c) {
        const double w = w_qkv[o * d.channels + c];
        const float* f = fmap + (b * d.channels + c) * n;
        for (int64_t t = 0; t < n; ++t) row[t] += w * double(f[t]);
      }
    }
  }
  // Channels [first, first + heads*head_size) as head rows.
  auto part = [&](int64_t first, int64_t head_size) {
    return head_rows(d.batch, d.heads, n, head_size,
                     [&](int64_t b, int64_t h, int64_t t, int64_t c) {
                       return qkv[size_t((b * channels + first + h * head_size + c) * n + t)];
                     });
  };
  posenc_attention_desc a;
  posenc_attention_desc_init(&a, d.batch, d.heads, n, n, d.head_dim);
  a.value_head_dim = dv;
  a.scale = d.scale;
  a.bias = POSENC_BIAS_RELATIVE_2D;
  a.map_height = d.height;
  a.map_width = d.width;
  a.tables_per_head = d.tables_per_head;
  a.bias_uses_scaled_q = d.bias_uses_scaled_q;
  AttentionInputs in{};
  in.table_h = rel_h;
  in.table_w = rel_w;
  const std::vector<double> tokens =
      attention_core(a, part(0, d.head_dim), part(qk, d.head_dim), part(2 * qk, dv), in);
  // [b, h, (x, y), c] to [b, h*dh + c, (x / s, y / s)], the mean of each s x s
  // window (AvgPool2d(s, s): the last row and column of an odd map dropped).
  const int64_t s = d.stride, out_h = d.height / s, out_w = d.width / s;
  std::vector<double> out(size_t(d.batch * inner * out_h * out_w), 0.0);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t x = 0; x < out_h * s; ++x) {
        for (int64_t y = 0; y < out_w * s; ++y) {
          const int64_t t = x * d.width + y, pooled = x / s * out_w + y / s;
          for (int64_t c = 0; c < dv; ++c) {
            out[size_t((b * inner + h * dv + c) * out_h * out_w + pooled)] +=
                tokens[size_t(((b * d.heads + h) * n + t) * dv + c)] / double(s * s);
          }
        }
      }
    }
  }
  return out;
}

int64_t disentangled_row(const posenc_attention_desc& d, int64_t r) {
  const int64_t span = disentangled_span(d);
  double delta = double(r);
  const int64_t m = d.num_buckets / 2;
  if (d.num_buckets > 0 && (r > m || r < -m)) {
    // DeBERTa's make_log_bucket_position past the linear buckets.
    const double magnitude = std::ceil(std::log(std::fabs(double(r)) / double(m)) /
                                       std::log(double(d.max_distance - 1) / double(m)) *
                                       double(m - 1)) +
                             double(m);
    delta = r > 0 ? magnitude : -magnitude;
  }
  return int64_t(std::clamp(delta + double(span), 0.0, double(2 * span - 1)));
}

}  // namespace posenc::reference
