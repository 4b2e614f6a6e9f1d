// Tiles of 1D relative logits (docs/design.md section 4). A tile of queries
// against a block of keys: one GEMM of the queries against the contiguous
// window of table rows the tile needs, then a per-row gather of that
// cache-resident result into the caller's buffer. A block of queries against
// all keys: the same, except that the logits whose table rows are
// consecutive for every query (the unclamped, unmasked distances) are
// written straight into the output by GEMMs with a skewed row stride, so
// that only the two triangles at the ends of the rows (and clamped or masked
// runs) go through the gather. Used by the 1D relative logits op; usable by
// fused attention for its per-block bias.
#pragma once

#include <cstdint>

#include "kernels/relative/relative_kernels.hpp"
#include "ops/relative/relative_index.hpp"

namespace posenc::ops {

// The problem of posenc_relative_logits_1d for one head (validated).
struct Relative1dGeometry {
  int64_t queries = 0, keys = 0, dim = 0;
  int64_t query_offset = 0;  // p: query i sits at position p + i
  int64_t clip = 0;          // K > 0: distances clamped to [-K, K]; 0: none
  bool causal = false;       // keys j > p + i get -infinity
};

// The table rule of posenc/relative.h for this geometry.
constexpr RelativeIndex relative_1d_index(const Relative1dGeometry& g) {
  return relative_index(g.query_offset, g.queries, g.keys, g.clip);
}

// Rows of one head's table as laid out in memory (the per-head stride).
int64_t relative_1d_table_rows(const Relative1dGeometry& g);

// Tiles of at most tile_queries x tile_keys logits. Every tile's GEMM reads
// `window` consecutive table rows (edge_window for the ends of a block of
// rows, direct_columns at most for a skewed GEMM), so that tiles share a few
// oneDNN primitives.
struct Relative1dTiling {
  Relative1dGeometry geometry;
  int64_t tile_queries = 0, tile_keys = 0;
  int64_t readable_rows = 0;  // rows a logit can read: relative_1d_index().readable
  int64_t window = 0;         // min(tile_queries + tile_keys - 1, readable_rows)
  int64_t edge_window = 0;    // min(tile_queries, readable_rows)
  int64_t direct_columns = 0; // widest skewed GEMM written straight to the output

  int64_t scratch_floats() const { return tile_queries * window; }
};

// tile_queries in [1, queries], tile_keys in [1, keys], direct_columns >= 1.
Relative1dTiling make_relative_1d_tiling(const Relative1dGeometry& g, int64_t tile_queries,
                                         int64_t tile_keys, int64_t direct_columns);

// Writes the logits of queries [i0, i0 + m) and keys [j0, j0 + n) of one head:
// out[r * ldo + c] = logit(i0 + r, j0 + c), m <= tile_queries,
// n <= tile_keys. q points to query i0's row (row stride ldq); table is the
// head's table (row stride dim); scratch holds tiling.scratch_floats()
// floats. stream: write out with non-temporal stores (gather_row_stream).
// Single-threaded (runs its GEMM on the calling thread inside an OpenMP
// region).
void relative_1d_tile(const RelativeKernels& kernels, const Relative1dTiling& tiling,
                      const float* q, int64_t ldq, const float* table, int64_t i0, int64_t m,
                      int64_t j0, int64_t n, float* out, int64_t ldo, float* scratch,
                      bool stream);

// Writes all keys of queries [i0, i0 + m) of one head: out[r * ldo + j] =
// logit(i0 + r, j) for j < keys, m <= tile_queries; otherwise as
// relative_1d_tile (with ordinary stores).
void relative_1d_rows(const RelativeKernels& kernels, const Relative1dTiling& tiling,
                      const float* q, int64_t ldq, const float* table, int64_t i0, int64_t m,
                      float* out, int64_t ldo, float* scratch);

}  // namespace posenc::ops
