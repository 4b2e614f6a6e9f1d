#include "ops/relative_1d.hpp"

#include <algorithm>

#include "ops/relative_scratch.hpp"
#include "runtime/parallel.hpp"

namespace posenc::ops {
namespace {

// Tile sizes: the GEMM result of a full tile, 64 x (64 + 1024 - 1) floats
// (about 280 KB), stays in the L2 cache for the gather; its extra columns
// cost (64 - 1) / 1024, about 6%, over the logits themselves.
constexpr int64_t kTileQueries = 64;
constexpr int64_t kTileKeys = 1024;

}  // namespace

void relative_logits_1d(const ExecContext& ctx, int64_t batch, int64_t heads,
                        const Relative1dGeometry& g, const float* q, const float* table,
                        int64_t table_heads, float* out) {
  const Relative1dTiling tiling = make_relative_1d_tiling(
      g, std::min(g.queries, kTileQueries), std::min(g.keys, kTileKeys));
  const int64_t query_tiles = (g.queries + tiling.tile_queries - 1) / tiling.tile_queries;
  const int64_t key_tiles = (g.keys + tiling.tile_keys - 1) / tiling.tile_keys;
  const int64_t table_stride = table_heads > 1 ? relative_1d_table_rows(g) * g.dim : 0;
  const RelativeKernels& kernels = ctx.kernels->relative;
  parallel_for(ctx.num_threads, batch * heads * query_tiles * key_tiles, [&](int64_t index) {
    const int64_t head_index = index / (query_tiles * key_tiles);  // b * heads + h
    const int64_t i0 = (index / key_tiles % query_tiles) * tiling.tile_queries;
    const int64_t j0 = index % key_tiles * tiling.tile_keys;
    const int64_t m = std::min(tiling.tile_queries, g.queries - i0);
    const int64_t n = std::min(tiling.tile_keys, g.keys - j0);
    relative_1d_tile(kernels, tiling, q + (head_index * g.queries + i0) * g.dim, g.dim,
                     table + head_index % heads * table_stride, i0, m, j0, n,
                     out + (head_index * g.queries + i0) * g.keys + j0, g.keys,
                     relative_thread_scratch(tiling.scratch_floats()));
  });
}

}  // namespace posenc::ops
