#include "ops/relative_1d_tile.hpp"

#include <algorithm>

#include "ops/relative_gemm.hpp"

namespace posenc::ops {
namespace {

// The row of distance 0: unclipped, row 0 is the distance -(p + queries - 1);
// clipped, row K is 0.
int64_t zero_row(const Relative1dGeometry& g) {
  return g.clip > 0 ? g.clip : g.query_offset + g.queries - 1;
}

// The table row of a distance (key minus query position).
int64_t table_row(const Relative1dGeometry& g, int64_t distance) {
  if (g.clip > 0) distance = std::clamp(distance, -g.clip, g.clip);
  return distance + zero_row(g);
}

}  // namespace

int64_t relative_1d_table_rows(const Relative1dGeometry& g) {
  return g.clip > 0 ? 2 * g.clip + 1 : g.query_offset + g.queries + g.keys - 1;
}

Relative1dTiling make_relative_1d_tiling(const Relative1dGeometry& g, int64_t tile_queries,
                                         int64_t tile_keys) {
  Relative1dTiling t;
  t.geometry = g;
  t.tile_queries = tile_queries;
  t.tile_keys = tile_keys;
  t.readable_rows = g.clip > 0 ? 2 * g.clip + 1 : g.queries + g.keys - 1;
  t.window = std::min(tile_queries + tile_keys - 1, t.readable_rows);
  return t;
}

void relative_1d_tile(const RelativeKernels& kernels, const Relative1dTiling& tiling,
                      const float* q, int64_t ldq, const float* table, int64_t i0, int64_t m,
                      int64_t j0, int64_t n, float* out, int64_t ldo, float* scratch) {
  const Relative1dGeometry& g = tiling.geometry;
  const int64_t p = g.query_offset;
  // The distances j - (p + i) of the tile's visible logits span
  // [d_min, d_max]; the causal mask hides every distance above 0.
  const int64_t d_min = j0 - (p + i0 + m - 1);
  const int64_t d_max = g.causal ? std::min<int64_t>(j0 + n - 1 - (p + i0), 0)
                                 : j0 + n - 1 - (p + i0);
  const int64_t window = tiling.window;
  if (d_max < d_min) {  // every key of the tile is masked
    for (int64_t r = 0; r < m; ++r) kernels.gather_row(scratch, window, 0, 0, out + r * ldo, n);
    return;
  }
  // The rows [table_row(d_min), table_row(d_max)] number at most
  // min(m + n - 1, readable_rows) <= window, so this window holds them all
  // and stays inside the readable rows.
  const int64_t lo = std::min(table_row(g, d_min), tiling.readable_rows - window);

  query_table_gemm(m, window, g.dim, q, ldq, table + lo * g.dim, scratch, window);

  // Column c of row r reads window column table_row(j0 + c - (p + i)) - lo.
  // Unclipped, that is c + shift exactly. Clipped, the kernel's clamp to
  // [0, window) equals the clamp to [-K, K]: a distance below -K needs row 0,
  // so then lo = 0; one above K needs row 2K, so then the window ends at 2K.
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = i0 + r;
    const int64_t shift = j0 - (p + i) + zero_row(g) - lo;
    const int64_t visible = g.causal ? std::clamp<int64_t>(p + i - j0 + 1, 0, n) : n;
    kernels.gather_row(scratch + r * window, window, shift, visible, out + r * ldo, n);
  }
}

}  // namespace posenc::ops
