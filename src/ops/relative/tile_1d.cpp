#include "ops/relative/tile_1d.hpp"

#include <algorithm>

#include "ops/relative/gemm.hpp"

namespace posenc::ops {

int64_t relative_1d_table_rows(const Relative1dGeometry& g) { return relative_1d_index(g).rows; }

Relative1dTiling make_relative_1d_tiling(const Relative1dGeometry& g, int64_t tile_queries,
                                         int64_t tile_keys, int64_t direct_columns) {
  Relative1dTiling t;
  t.geometry = g;
  t.tile_queries = tile_queries;
  t.tile_keys = tile_keys;
  t.readable_rows = relative_1d_index(g).readable;
  t.window = std::min(tile_queries + tile_keys - 1, t.readable_rows);
  t.edge_window = std::min(tile_queries, t.readable_rows);
  t.direct_columns = direct_columns;
  return t;
}

namespace {

// One GEMM of the m queries against `width` consecutive readable table rows,
// the first of them needed being the row of distance d_first; returns the
// window's first row lo. The caller guarantees that the rows it needs from
// d_first on number at most width, so the window holds them all and stays
// inside the readable rows.
int64_t window_logits(const Relative1dTiling& t, int64_t width, const float* q, int64_t ldq,
                      const float* table, int64_t m, int64_t d_first, float* scratch) {
  const int64_t lo =
      std::min(relative_1d_index(t.geometry).row(d_first), t.readable_rows - width);
  query_table_gemm(m, width, t.geometry.dim, q, ldq, table + lo * t.geometry.dim, scratch,
                   width);
  return lo;
}

// Keys [j_s, j_s + count) of query i from its row s of window logits (width
// columns from table row lo): key j reads window column
// row(j - (p + i)) - lo. Unclipped, that is j - j_s + shift exactly.
// Clipped, the kernel's clamp to [0, width) equals the clamp to [-K, K]: a
// distance below -K needs row 0, so then lo = 0; one above K needs row 2K,
// so then the window ends at 2K.
void gather_keys(const RelativeKernels& kernels, const Relative1dGeometry& g, const float* s,
                 int64_t width, int64_t lo, int64_t i, int64_t j_s, int64_t count, float* out,
                 bool stream = false) {
  const int64_t p = g.query_offset;
  const int64_t shift = j_s - (p + i) + relative_1d_index(g).center - lo;
  const int64_t visible = g.causal ? std::clamp<int64_t>(p + i - j_s + 1, 0, count) : count;
  (stream ? kernels.gather_row_stream : kernels.gather_row)(s, width, shift, visible, out,
                                                            count);
}

}  // namespace

void relative_1d_tile(const RelativeKernels& kernels, const Relative1dTiling& tiling,
                      const float* q, int64_t ldq, const float* table, int64_t i0, int64_t m,
                      int64_t j0, int64_t n, float* out, int64_t ldo, float* scratch,
                      bool stream) {
  const Relative1dGeometry& g = tiling.geometry;
  const int64_t p = g.query_offset;
  // The distances j - (p + i) of the tile's visible logits span
  // [d_min, d_max]; the causal mask hides every distance above 0. Their rows
  // number at most min(m + n - 1, readable_rows) <= window.
  const int64_t d_min = j0 - (p + i0 + m - 1);
  const int64_t d_max = g.causal ? std::min<int64_t>(j0 + n - 1 - (p + i0), 0)
                                 : j0 + n - 1 - (p + i0);
  const int64_t window = tiling.window;
  const int64_t lo =
      d_max < d_min ? 0 : window_logits(tiling, window, q, ldq, table, m, d_min, scratch);
  for (int64_t r = 0; r < m; ++r) {
    gather_keys(kernels, g, scratch + r * window, window, lo, i0 + r, j0, n, out + r * ldo,
                stream);
  }
}

void relative_1d_rows(const RelativeKernels& kernels, const Relative1dTiling& tiling,
                      const float* q, int64_t ldq, const float* table, int64_t i0, int64_t m,
                      float* out, int64_t ldo, float* scratch) {
  const Relative1dGeometry& g = tiling.geometry;
  const int64_t keys = g.keys, K = g.clip;
  // Skewed columns: column c holds the distance d0 + c for every row, and
  // row r's key j = c - (m - 1) + r. Columns [c_lo, c_hi) are keys of every
  // row, unclamped and unmasked: their table rows are consecutive.
  const int64_t d0 = -(m - 1) - (g.query_offset + i0);
  int64_t c_lo = m - 1, c_hi = keys;
  if (K > 0) {
    c_lo = std::max(c_lo, -K - d0);
    // min(c_hi, K - d0 + 1) without forming K - d0 + 1 where it is past
    // keys: -d0 (p + i0 + m - 1) and K can each be near INT64_MAX.
    if (-d0 < keys - K - 1) c_hi = std::min(c_hi, K - d0 + 1);
  }
  if (g.causal) c_hi = std::min(c_hi, 1 - d0);
  if (c_hi - c_lo < m) {  // little to write directly: rectangular tiles
    for (int64_t j0 = 0; j0 < keys; j0 += tiling.tile_keys) {
      relative_1d_tile(kernels, tiling, q, ldq, table, i0, m, j0,
                       std::min(tiling.tile_keys, keys - j0), out + j0, ldo, scratch, false);
    }
    return;
  }
  // Column c of row r is at out[r * ldo + c - (m - 1) + r]: a GEMM writes
  // the skewed columns straight into out with a row stride of ldo + 1.
  for (int64_t c = c_lo; c < c_hi; c += tiling.direct_columns) {
    const int64_t width = std::min(tiling.direct_columns, c_hi - c);
    query_table_gemm(m, width, g.dim, q, ldq, table + relative_1d_index(g).row(d0 + c) * g.dim,
                     out + c - (m - 1), ldo + 1);
  }
  // The columns left of c_lo (row r: keys [0, c_lo - (m-1) + r)) need at
  // most max(m - 1, 1) table rows: m - 1 columns, or all clamped to -K. So
  // do the columns from c_hi on (keys [c_hi - (m-1) + r, keys)): m - 1
  // columns, or clamped to K, or masked (no rows).
  const int64_t width = tiling.edge_window;
  if (c_lo > 0) {
    const int64_t lo = window_logits(tiling, width, q, ldq, table, m, d0, scratch);
    for (int64_t r = 0; r < m; ++r) {
      gather_keys(kernels, g, scratch + r * width, width, lo, i0 + r, 0, c_lo - (m - 1) + r,
                  out + r * ldo);
    }
  }
  if (c_hi < keys + m - 1) {
    const bool masked = g.causal && d0 + c_hi > 0;
    const int64_t lo =
        masked ? 0 : window_logits(tiling, width, q, ldq, table, m, d0 + c_hi, scratch);
    for (int64_t r = 0; r < m; ++r) {
      const int64_t j_s = c_hi - (m - 1) + r;
      gather_keys(kernels, g, scratch + r * width, width, lo, i0 + r, j_s, keys - j_s,
                  out + r * ldo + j_s);
    }
  }
}

}  // namespace posenc::ops
