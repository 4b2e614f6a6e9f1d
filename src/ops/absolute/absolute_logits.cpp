#include "ops/absolute/absolute_logits.hpp"

#include "ops/relative/gemm.hpp"
#include "ops/relative/row_tiles.hpp"
#include "runtime/parallel.hpp"

namespace posenc::ops {

void absolute_logits(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t queries,
                     int64_t keys, int64_t dim, const float* q, const float* table,
                     int64_t table_heads, float* out) {
  // Each tile is one GEMM written straight into its rows of out.
  const RowTiles tiles(batch, heads, queries, table_heads > 1, 256);
  const GemmSlots gemms(region_threads(ctx.num_threads, tiles.count()));
  for (const int64_t index : {int64_t(0), tiles.count() - 1}) {  // a full tile and the last
    gemms.prepare(query_table_shape(tiles.tile(index).rows, keys, dim, dim, keys));
  }
  parallel_for(ctx.num_threads, tiles.count(), [&](int64_t index) {
    const RowTile t = tiles.tile(index);
    query_table_gemm(t.rows, keys, dim, q + t.row0 * dim, dim, table + t.head * keys * dim,
                     out + t.row0 * keys, keys);
  });
}

}  // namespace posenc::ops
