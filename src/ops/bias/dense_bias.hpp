// The dense position bias [heads, q_len, kv_len] of posenc_position_bias.
#pragma once

#include "posenc/bias.h"
#include "runtime/context.hpp"

namespace posenc::ops {

// desc validated (api/bias.cpp); table as posenc/bias.h describes it.
void position_bias(const ExecContext& ctx, const posenc_position_bias_desc& desc,
                   const float* table, float* out);

}  // namespace posenc::ops
