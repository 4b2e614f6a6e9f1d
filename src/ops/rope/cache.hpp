// The C ABI's posenc_rope_cache: cos/sin rows of positions [0, max_positions),
// immutable after creation.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/rope/frequencies.hpp"
#include "runtime/context.hpp"

struct posenc_rope_cache {
  posenc::ops::RopeAngles angles;
  int64_t max_positions;
  std::vector<float> rows;  // [max_positions, angles.row_floats()]
};

namespace posenc::ops {

// Builds the rows in double on ctx's threads; config validated by the caller.
void build_rope_cache(const ExecContext& ctx, posenc_rope_cache& cache);

}  // namespace posenc::ops
