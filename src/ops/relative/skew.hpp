// The rel_to_abs skew (posenc_rel_to_abs) as a per-row gather; arguments
// validated by api/relative.cpp.
#pragma once

#include <cstdint>

#include "runtime/context.hpp"

namespace posenc::ops {

void rel_to_abs(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t length,
                const float* in, float* out);

}  // namespace posenc::ops
