#include "ops/relative/logits_1d.hpp"

#include <algorithm>

#include "ops/stream_output.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"
#include "runtime/store_fence.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// Tile sizes. Rectangular tiles (for streamed outputs): the GEMM result of a
// full tile, 64 x (64 + 2048 - 1) floats (about 540 KB), stays in the L2
// cache for the gather; its extra columns cost (64 - 1) / 2048, about 3%,
// over the logits themselves. Rows written in place: skewed GEMMs at most
// 512 columns wide (their table window, 512 x dim, stays in the L2 cache).
constexpr int64_t kTileQueries = 64;
constexpr int64_t kTileKeys = 2048;
constexpr int64_t kDirectColumns = 512;

// RelativeKernels::gather_row of the dry run (below).
void skip_gather_row(const float*, int64_t, int64_t, int64_t, float*, int64_t) {}

}  // namespace

void relative_logits_1d(const ExecContext& ctx, int64_t batch, int64_t heads,
                        const Relative1dGeometry& g, const float* q, const float* table,
                        int64_t table_heads, float* out) {
  const Relative1dTiling tiling = make_relative_1d_tiling(
      g, std::min(g.queries, kTileQueries), std::min(g.keys, kTileKeys), kDirectColumns);
  const int64_t query_tiles = ceil_div(g.queries, tiling.tile_queries);
  const int64_t table_stride = table_heads > 1 ? relative_1d_table_rows(g) * g.dim : 0;
  const RelativeKernels& kernels = ctx.kernels->relative;
  // A large output is gathered from tiles with non-temporal stores; a
  // smaller one, likely read again from the caches, is mostly written in
  // place by the skewed GEMMs.
  const bool stream = stream_output(batch * heads * g.queries * g.keys * 4);
  const int64_t key_tiles = stream ? ceil_div(g.keys, tiling.tile_keys) : 1;
  const int64_t tasks = batch * heads * query_tiles * key_tiles;
  const int threads = region_threads(ctx.num_threads, tasks);
  const RegionScratch<float, struct Relative1dTileTag> scratch(threads, tiling.scratch_floats());
  auto run = [&](const RelativeKernels& with, int64_t index, int slot) {
    const int64_t head_index = index / (query_tiles * key_tiles);  // b * heads + h
    const int64_t i0 = index / key_tiles % query_tiles * tiling.tile_queries;
    const int64_t m = std::min(tiling.tile_queries, g.queries - i0);
    const int64_t row0 = head_index * g.queries + i0;
    const float* head_table = table + head_index % heads * table_stride;
    if (stream) {
      const int64_t j0 = index % key_tiles * tiling.tile_keys;
      relative_1d_tile(with, tiling, q + row0 * g.dim, g.dim, head_table, i0, m, j0,
                       std::min(tiling.tile_keys, g.keys - j0), out + row0 * g.keys + j0,
                       g.keys, scratch.slot(slot), true);
      store_fence();
    } else {
      relative_1d_rows(with, tiling, q + row0 * g.dim, g.dim, head_table, i0, m,
                       out + row0 * g.keys, g.keys, scratch.slot(slot));
    }
  };
  // The GEMM shapes (window widths, skewed columns) follow the tiles: the
  // first call of a problem runs the first head's tiles dry to make them
  // all before the region. A dry GEMM computes nothing, and the gathers are
  // skipped too: the dry run writes nothing, to out or elsewhere.
  const GemmSlots gemms(threads);
  const PreparedProblem<struct Relative1dTag, 10> problem(
      {g.queries, g.keys, g.dim, g.query_offset, g.clip, int64_t(g.causal), batch * heads,
       int64_t(stream), table_heads, threads},
      gemms);
  if (!problem.before(gemms)) {
    RelativeKernels no_gathers = kernels;
    no_gathers.gather_row = no_gathers.gather_row_stream = &skip_gather_row;
    const GemmSlots::Use dry(gemms, 0, false, true);
    for (int64_t index = 0; index < query_tiles * key_tiles; ++index) run(no_gathers, index, 0);
    problem.remember(gemms);
  }
  parallel_for(ctx.num_threads, tasks,
               [&](int64_t index, int slot) { run(kernels, index, slot); });
}

}  // namespace posenc::ops
