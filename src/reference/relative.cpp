#include "reference/relative.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace posenc::reference {
namespace {

double dot(const float* a, const float* b, int64_t dim) {
  double sum = 0.0;
  for (int64_t c = 0; c < dim; ++c) sum += double(a[c]) * double(b[c]);
  return sum;
}

// The table of head h: [rows, dim] each, shared when table_heads == 1.
const float* head_table(const float* table, int64_t table_heads, int64_t h, int64_t rows,
                        int64_t dim) {
  return table + (table_heads == 1 ? 0 : h * rows * dim);
}

// out[b,h,i,j] = q[b,h,i] . table_h[row_of(i, j)], or -infinity where
// row_of returns a negative row (masked); each table has `rows` rows.
template <class RowOf>
std::vector<double> logits(int64_t batch, int64_t heads, int64_t queries, int64_t keys,
                           int64_t dim, const float* q, const float* table, int64_t table_heads,
                           int64_t rows, const RowOf& row_of) {
  std::vector<double> out(size_t(batch * heads * queries * keys));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* t = head_table(table, table_heads, h, rows, dim);
      for (int64_t i = 0; i < queries; ++i) {
        const int64_t qrow = (b * heads + h) * queries + i;
        for (int64_t j = 0; j < keys; ++j) {
          const int64_t r = row_of(i, j);
          out[size_t(qrow * keys + j)] = r < 0 ? -std::numeric_limits<double>::infinity()
                                               : dot(q + qrow * dim, t + r * dim, dim);
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<double> absolute_logits(int64_t batch, int64_t heads, int64_t queries,
                                    int64_t keys, int64_t dim, const float* q,
                                    const float* table, int64_t table_heads) {
  return logits(batch, heads, queries, keys, dim, q, table, table_heads, keys,
                [](int64_t, int64_t j) { return j; });
}

std::vector<double> relative_logits_1d(int64_t batch, int64_t heads, int64_t queries,
                                       int64_t keys, int64_t dim, const float* q,
                                       const float* table, int64_t table_heads,
                                       const RelativeOptions& o) {
  return logits(batch, heads, queries, keys, dim, q, table, table_heads,
                table_rows_1d(o.query_offset, queries, keys, o.clip),
                [&](int64_t i, int64_t j) {
                  if (o.causal && j > o.query_offset + i) return int64_t(-1);
                  return table_row_1d(o.query_offset, queries, o.clip, i, j);
                });
}

Relative2d relative_logits_2d_decomposed(int64_t batch, int64_t heads, int64_t height,
                                         int64_t width, int64_t dim, const float* q,
                                         const float* row_table, const float* column_table,
                                         int64_t table_heads) {
  const int64_t X = height, Y = width, N = X * Y;
  Relative2d out{std::vector<double>(size_t(batch * heads * N * X)),
                 std::vector<double>(size_t(batch * heads * N * Y))};
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* rh = head_table(row_table, table_heads, h, 2 * X - 1, dim);
      const float* rw = head_table(column_table, table_heads, h, 2 * Y - 1, dim);
      for (int64_t x1 = 0; x1 < X; ++x1) {
        for (int64_t y1 = 0; y1 < Y; ++y1) {
          const int64_t n = (b * heads + h) * N + x1 * Y + y1;
          for (int64_t x2 = 0; x2 < X; ++x2) {
            out.rel_h[size_t(n * X + x2)] = dot(q + n * dim, rh + (x2 - x1 + X - 1) * dim, dim);
          }
          for (int64_t y2 = 0; y2 < Y; ++y2) {
            out.rel_w[size_t(n * Y + y2)] = dot(q + n * dim, rw + (y2 - y1 + Y - 1) * dim, dim);
          }
        }
      }
    }
  }
  return out;
}

int64_t Axis2d::row(int64_t a, int64_t c) const {
  const double q_ratio = std::max(double(k) / double(q), 1.0);
  const double k_ratio = std::max(double(q) / double(k), 1.0);
  // Each step rounded to float32 (volatile: no fused multiply-add).
  const volatile float q_coord = float(a) * float(q_ratio);
  const volatile float k_coord = float(c) * float(k_ratio);
  const volatile float difference = q_coord - k_coord;
  const volatile float sum = difference + float(double(k - 1) * k_ratio);
  const int64_t query_minus_key_row = std::clamp<int64_t>(int64_t(sum), 0, rows() - 1);
  return query_minus_key ? query_minus_key_row : rows() - 1 - query_minus_key_row;
}

Relative2d relative_logits_2d_maps(int64_t batch, int64_t heads, const Axis2d& axis_h,
                                   const Axis2d& axis_w, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads) {
  const int64_t X = axis_h.q, Y = axis_w.q, N = X * Y, KX = axis_h.k, KY = axis_w.k;
  Relative2d out{std::vector<double>(size_t(batch * heads * N * KX)),
                 std::vector<double>(size_t(batch * heads * N * KY))};
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* rh = head_table(row_table, table_heads, h, axis_h.rows(), dim);
      const float* rw = head_table(column_table, table_heads, h, axis_w.rows(), dim);
      for (int64_t x1 = 0; x1 < X; ++x1) {
        for (int64_t y1 = 0; y1 < Y; ++y1) {
          const int64_t n = (b * heads + h) * N + x1 * Y + y1;
          for (int64_t x2 = 0; x2 < KX; ++x2) {
            out.rel_h[size_t(n * KX + x2)] = dot(q + n * dim, rh + axis_h.row(x1, x2) * dim, dim);
          }
          for (int64_t y2 = 0; y2 < KY; ++y2) {
            out.rel_w[size_t(n * KY + y2)] = dot(q + n * dim, rw + axis_w.row(y1, y2) * dim, dim);
          }
        }
      }
    }
  }
  return out;
}

std::vector<double> relative_logits_2d(int64_t batch, int64_t heads, int64_t height,
                                       int64_t width, int64_t dim, const float* q,
                                       const float* row_table, const float* column_table,
                                       int64_t table_heads) {
  const Relative2d parts = relative_logits_2d_decomposed(batch, heads, height, width, dim, q,
                                                         row_table, column_table, table_heads);
  const int64_t X = height, Y = width, N = X * Y;
  std::vector<double> out(size_t(batch * heads * N * N));
  for (int64_t n1 = 0; n1 < batch * heads * N; ++n1) {
    for (int64_t x2 = 0; x2 < X; ++x2) {
      for (int64_t y2 = 0; y2 < Y; ++y2) {
        out[size_t(n1 * N + x2 * Y + y2)] =
            parts.rel_h[size_t(n1 * X + x2)] + parts.rel_w[size_t(n1 * Y + y2)];
      }
    }
  }
  return out;
}

int64_t pad_reshape_workspace(int64_t length) {
  const int64_t padded_columns = length * 2 * length;                 // [L, 2L] flattened
  const int64_t padded_flat = padded_columns + (length - 1);          // + L-1 zeros
  return padded_columns + padded_flat;
}

void pad_reshape_rel_to_abs(int64_t length, const float* in, float* out, float* workspace) {
  const int64_t L = length, in_cols = 2 * L - 1;
  // x = cat(in, zeros[L, 1]) along the columns: [L, 2L].
  float* x = workspace;
  for (int64_t i = 0; i < L; ++i) {
    std::memcpy(x + i * 2 * L, in + i * in_cols, size_t(in_cols) * sizeof(float));
    x[i * 2 * L + in_cols] = 0.0f;
  }
  // flat_x_padded = cat(flatten(x), zeros[L-1]): L*2L + L-1 = (L+1)(2L-1).
  float* flat = workspace + L * 2 * L;
  std::memcpy(flat, x, size_t(L * 2 * L) * sizeof(float));
  std::fill(flat + L * 2 * L, flat + L * 2 * L + (L - 1), 0.0f);
  // final = flat.reshape(L+1, 2L-1)[:L, L-1:], materialized.
  for (int64_t i = 0; i < L; ++i) {
    std::memcpy(out + i * L, flat + i * in_cols + (L - 1), size_t(L) * sizeof(float));
  }
}

std::vector<float> pad_reshape_rel_to_abs(int64_t matrices, int64_t length, const float* in) {
  std::vector<float> out(size_t(matrices * length * length));
  std::vector<float> workspace(size_t(pad_reshape_workspace(length)));
  for (int64_t m = 0; m < matrices; ++m) {
    pad_reshape_rel_to_abs(length, in + m * length * (2 * length - 1),
                           out.data() + m * length * length, workspace.data());
  }
  return out;
}

}  // namespace posenc::reference
