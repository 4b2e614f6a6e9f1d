#include "ops/relative_2d_tile.hpp"

#include "ops/relative_gemm.hpp"

namespace posenc::ops {
namespace {

// The tile's queries against every row of both tables, in scratch:
// rows [m, 2X-1] (q . Rh) and columns [m, 2Y-1] (q . Rw).
struct WindowLogits {
  const float* rows;
  const float* columns;
};

WindowLogits window_logits(const Relative2dTiling& t, const float* q, int64_t ldq,
                           const float* row_table, const float* column_table, int64_t m,
                           float* scratch) {
  float* rows = scratch;
  float* columns = scratch + m * t.row_window();
  query_table_gemm(m, t.row_window(), t.dim, q, ldq, row_table, rows, t.row_window());
  query_table_gemm(m, t.column_window(), t.dim, q, ldq, column_table, columns,
                   t.column_window());
  return WindowLogits{rows, columns};
}

}  // namespace

// Query (x1, y1) needs the columns X-1-x1 .. 2X-2-x1 of its row window
// logits (x2 - x1 + X - 1 for x2 < X), and Y-1-y1 .. 2Y-2-y1 of its column
// window logits.

void relative_2d_tile_decomposed(const RelativeKernels& kernels, const Relative2dTiling& t,
                                 const float* q, int64_t ldq, const float* row_table,
                                 const float* column_table, int64_t n0, int64_t m,
                                 float* rel_h, float* rel_w, float* scratch) {
  const WindowLogits w = window_logits(t, q, ldq, row_table, column_table, m, scratch);
  const int64_t X = t.height, Y = t.width;
  for (int64_t r = 0; r < m; ++r) {
    const int64_t token = (n0 + r) % (X * Y);
    kernels.gather_row(w.rows + r * t.row_window(), t.row_window(), X - 1 - token / Y, X,
                       rel_h + r * X, X);
    kernels.gather_row(w.columns + r * t.column_window(), t.column_window(), Y - 1 - token % Y, Y,
                       rel_w + r * Y, Y);
  }
}

void relative_2d_tile_bias(const RelativeKernels& kernels, const Relative2dTiling& t,
                           const float* q, int64_t ldq, const float* row_table,
                           const float* column_table, int64_t n0, int64_t m, float* out,
                           int64_t ldo, float* scratch) {
  const WindowLogits w = window_logits(t, q, ldq, row_table, column_table, m, scratch);
  const int64_t X = t.height, Y = t.width;
  for (int64_t r = 0; r < m; ++r) {
    const int64_t token = (n0 + r) % (X * Y);
    kernels.broadcast_sum_row(w.rows + r * t.row_window() + X - 1 - token / Y, X,
                              w.columns + r * t.column_window() + Y - 1 - token % Y, Y,
                              out + r * ldo);
  }
}

}  // namespace posenc::ops
