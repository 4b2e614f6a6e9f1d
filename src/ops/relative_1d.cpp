#include "ops/relative_1d.hpp"

#include <algorithm>

#include "ops/relative_scratch.hpp"
#include "runtime/parallel.hpp"

namespace posenc::ops {
namespace {

// Tile sizes: the GEMM result of a full rectangular tile, 64 x (64 + 1024 -
// 1) floats (about 280 KB), stays in the L2 cache for the gather; its extra
// columns cost (64 - 1) / 1024, about 6%, over the logits themselves. The
// skewed GEMMs that write straight into the output are at most 512 columns
// wide (their table window, 512 x dim, stays in the L2 cache).
constexpr int64_t kTileQueries = 64;
constexpr int64_t kTileKeys = 1024;
constexpr int64_t kDirectColumns = 512;

}  // namespace

void relative_logits_1d(const ExecContext& ctx, int64_t batch, int64_t heads,
                        const Relative1dGeometry& g, const float* q, const float* table,
                        int64_t table_heads, float* out) {
  const Relative1dTiling tiling = make_relative_1d_tiling(
      g, std::min(g.queries, kTileQueries), std::min(g.keys, kTileKeys), kDirectColumns);
  const int64_t query_tiles = (g.queries + tiling.tile_queries - 1) / tiling.tile_queries;
  const int64_t table_stride = table_heads > 1 ? relative_1d_table_rows(g) * g.dim : 0;
  const RelativeKernels& kernels = ctx.kernels->relative;
  parallel_for(ctx.num_threads, batch * heads * query_tiles, [&](int64_t index) {
    const int64_t head_index = index / query_tiles;  // b * heads + h
    const int64_t i0 = index % query_tiles * tiling.tile_queries;
    const int64_t row0 = head_index * g.queries + i0;
    relative_1d_rows(kernels, tiling, q + row0 * g.dim, g.dim,
                     table + head_index % heads * table_stride, i0,
                     std::min(tiling.tile_queries, g.queries - i0), out + row0 * g.keys, g.keys,
                     relative_thread_scratch(tiling.scratch_floats()));
  });
}

}  // namespace posenc::ops
