#include "ops/relative_2d.hpp"

#include "ops/relative_2d_tile.hpp"
#include "ops/relative_row_tiles.hpp"
#include "ops/relative_scratch.hpp"
#include "runtime/parallel.hpp"

namespace posenc::ops {
namespace {

constexpr int64_t kTileRows = 128;

// Calls tile_fn(tile, row_table, column_table, scratch) for every row tile,
// on the context's threads.
template <class TileFn>
void for_each_tile(const ExecContext& ctx, int64_t batch, int64_t heads,
                   const Relative2dTiling& base, const float* row_table,
                   const float* column_table, int64_t table_heads, const TileFn& tile_fn) {
  const RowTiles tiles(batch, heads, base.height * base.width, table_heads > 1, kTileRows);
  Relative2dTiling tiling = base;
  tiling.tile_rows = tiles.max_rows();
  parallel_for(ctx.num_threads, tiles.count(), [&](int64_t index) {
    const RowTile t = tiles.tile(index);
    tile_fn(tiling, t, row_table + t.head * tiling.row_window() * tiling.dim,
            column_table + t.head * tiling.column_window() * tiling.dim,
            relative_thread_scratch(tiling.scratch_floats()));
  });
}

}  // namespace

void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   int64_t height, int64_t width, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads, float* rel_h, float* rel_w) {
  const RelativeKernels& kernels = ctx.kernels->relative;
  for_each_tile(ctx, batch, heads, Relative2dTiling{height, width, dim, 0}, row_table,
                column_table, table_heads,
                [&](const Relative2dTiling& tiling, const RowTile& t, const float* rh,
                    const float* rw, float* scratch) {
                  relative_2d_tile_decomposed(kernels, tiling, q + t.row0 * dim, dim, rh, rw,
                                              t.row0, t.rows, rel_h + t.row0 * height,
                                              rel_w + t.row0 * width, scratch);
                });
}

void relative_logits_2d(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t height,
                        int64_t width, int64_t dim, const float* q, const float* row_table,
                        const float* column_table, int64_t table_heads, float* out) {
  const RelativeKernels& kernels = ctx.kernels->relative;
  const int64_t tokens = height * width;
  for_each_tile(ctx, batch, heads, Relative2dTiling{height, width, dim, 0}, row_table,
                column_table, table_heads,
                [&](const Relative2dTiling& tiling, const RowTile& t, const float* rh,
                    const float* rw, float* scratch) {
                  relative_2d_tile_bias(kernels, tiling, q + t.row0 * dim, dim, rh, rw,
                                        t.row0, t.rows, out + t.row0 * tokens, tokens,
                                        scratch);
                });
}

}  // namespace posenc::ops
