// Absolute position logits q R^T (posenc_absolute_logits); arguments
// validated by api/relative.cpp.
#pragma once

#include <cstdint>

#include "runtime/context.hpp"

namespace posenc::ops {

void absolute_logits(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t queries,
                     int64_t keys, int64_t dim, const float* q, const float* table,
                     int64_t table_heads, float* out);

}  // namespace posenc::ops
