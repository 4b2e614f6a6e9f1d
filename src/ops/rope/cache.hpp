// The C ABI's posenc_rope_cache: cos/sin rows of positions [0, max_positions),
// immutable after creation.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/rope/frequencies.hpp"
#include "runtime/context.hpp"

struct posenc_rope_cache {
  // Of a cache of tables: rotary_dim, pairing and an attention factor of 1.
  posenc::ops::RopeAngles angles;
  int64_t max_positions;
  bool from_tables = false;  // the caller's cos and sin: angles.config says nothing else
  std::vector<float> rows;   // [max_positions, angles.row_floats()]
};

namespace posenc::ops {

// Builds the rows in double on ctx's threads; config validated by the caller.
void build_rope_cache(const ExecContext& ctx, posenc_rope_cache& cache);
// Builds the rows from the caller's cos and sin [max_positions, pairs] on
// ctx's threads.
void build_rope_cache_from_tables(const ExecContext& ctx, posenc_rope_cache& cache,
                                  const float* cos, const float* sin);
// The cache's cos and sin [max_positions, pairs], read back from its rows.
void read_rope_cache_tables(const posenc_rope_cache& cache, float* cos, float* sin);

}  // namespace posenc::ops
