// Applying RoPE to q/k tensors: arguments validated by the caller
// (api/rope.cpp); positions are known to be inside the angles' range.
#pragma once

#include <cstdint>

#include "ops/rope/cache.hpp"
#include "posenc/rope.h"
#include "runtime/context.hpp"

namespace posenc::ops {

// One tensor of `heads` heads rotated from in to out (out may equal in).
struct RopeTensor {
  int64_t heads;
  const void* in;
  void* out;
};

// What the tensors share.
struct RopeProblem {
  posenc_rope_layout layout;
  posenc_dtype dtype;
  int64_t batch, tokens, head_dim;
  posenc_rope_positions positions;
};

// Rotates the tensors with the cache's rows, or (cache NULL) rows computed on
// the fly from `angles`. Threads split batch x blocks of tokens; each block's
// rows are made once for all heads of every tensor.
void rope_apply(const ExecContext& ctx, const RopeAngles& angles, const posenc_rope_cache* cache,
                const RopeProblem& problem, const RopeTensor* tensors, int tensor_count);

}  // namespace posenc::ops
