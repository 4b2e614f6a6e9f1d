// One tile of 2D relative logits over an X-by-Y map (token n = x*Y + y): two
// GEMMs of the tile's queries against the whole row table Rh [2X-1, dim] and
// column table Rw [2Y-1, dim], then per-row gathers into the decomposed
// logits or broadcast sums into the full bias. Used by the 2D op; usable by
// fused attention for its per-block bias.
#pragma once

#include <cstdint>

#include "kernels/relative/relative_kernels.hpp"

namespace posenc::ops {

struct Relative2dTiling {
  int64_t height = 0, width = 0, dim = 0;
  int64_t tile_rows = 0;  // queries per tile, at most

  int64_t row_window() const { return 2 * height - 1; }
  int64_t column_window() const { return 2 * width - 1; }
  int64_t scratch_floats() const { return tile_rows * (row_window() + column_window()); }
};

// Query r of the tile is token (n0 + r) mod (X*Y), its row at q + r * ldq;
// r < m <= tile_rows; row_table and column_table are the head's tables (row
// stride dim); scratch holds tiling.scratch_floats() floats.

// rel_h[r * X + x2] and rel_w[r * Y + y2] of the tile's queries.
void relative_2d_tile_decomposed(const RelativeKernels& kernels, const Relative2dTiling& tiling,
                                 const float* q, int64_t ldq, const float* row_table,
                                 const float* column_table, int64_t n0, int64_t m,
                                 float* rel_h, float* rel_w, float* scratch);

// out[r * ldo + x2 * Y + y2] = rel_h(r, x2) + rel_w(r, y2), the full bias rows.
void relative_2d_tile_bias(const RelativeKernels& kernels, const Relative2dTiling& tiling,
                           const float* q, int64_t ldq, const float* row_table,
                           const float* column_table, int64_t n0, int64_t m, float* out,
                           int64_t ldo, float* scratch);

}  // namespace posenc::ops
