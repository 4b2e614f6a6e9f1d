// Cos/sin rows of RoPE (the layout of RopeAngles::row_floats), for one
// position: exactly (double, for caches), fast (fp32 sin/cos of angles
// reduced in double, for the on-the-fly path), or from the caller's tables.
#pragma once

#include <cstdint>

#include "ops/rope/frequencies.hpp"
#include "runtime/context.hpp"

namespace posenc::ops {

// scratch: rope_row_scratch(angles) doubles (exact) or floats (fast).
inline int64_t rope_row_scratch(const RopeAngles& angles) {
  return 2 * int64_t(angles.axis_inv_freq.size());
}

void exact_rope_row(const RopeAngles& angles, int64_t position, float* row, double* scratch);

void fast_rope_row(const ExecContext& ctx, const RopeAngles& angles, int64_t position,
                   float* row, float* scratch);

// The row of one position's cos and sin, angles.pairs() each.
void table_rope_row(const RopeAngles& angles, const float* cos, const float* sin, float* row);

}  // namespace posenc::ops
