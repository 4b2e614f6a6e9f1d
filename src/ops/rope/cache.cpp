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

}  // namespace posenc::ops
