#include "ops/rope/cache.hpp"

#include "ops/rope/rows.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {

void build_rope_cache(const ExecContext& ctx, posenc_rope_cache& cache) {
  const int64_t row_floats = cache.angles.row_floats();
  cache.rows.resize(size_t(cache.max_positions * row_floats));
  const RegionScratch<double, struct RopeCacheRowTag> scratch(
      region_threads(ctx.num_threads, cache.max_positions), rope_row_scratch(cache.angles));
  parallel_for(ctx.num_threads, cache.max_positions, [&](int64_t p, int slot) {
    exact_rope_row(cache.angles, p, cache.rows.data() + p * row_floats, scratch.slot(slot));
  });
}

void build_rope_cache_from_tables(const ExecContext& ctx, posenc_rope_cache& cache,
                                  const float* cos, const float* sin) {
  const int64_t row_floats = cache.angles.row_floats(), pairs = cache.angles.pairs();
  cache.rows.resize(size_t(cache.max_positions * row_floats));
  parallel_for(ctx.num_threads, cache.max_positions, [&](int64_t p, int) {
    table_rope_row(cache.angles, cos + p * pairs, sin + p * pairs,
                   cache.rows.data() + p * row_floats);
  });
}

void read_rope_cache_tables(const posenc_rope_cache& cache, float* cos, float* sin) {
  const int64_t row_floats = cache.angles.row_floats(), pairs = cache.angles.pairs();
  const bool interleaved = cache.angles.config.pairing == POSENC_ROPE_INTERLEAVED;
  for (int64_t p = 0; p < cache.max_positions; ++p) {
    const float* row = cache.rows.data() + p * row_floats;
    for (int64_t j = 0; j < pairs; ++j) {
      // Interleaved rows hold [c0 c0 c1 c1 ..] then [-s0 s0 -s1 s1 ..].
      cos[p * pairs + j] = interleaved ? row[2 * j] : row[j];
      sin[p * pairs + j] = interleaved ? row[2 * pairs + 2 * j + 1] : row[pairs + j];
    }
  }
}

}  // namespace posenc::ops
