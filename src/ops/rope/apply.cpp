#include "ops/rope/apply.hpp"

#include <algorithm>
#include <cstring>

#include "ops/rope/rows.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// Tokens per unit of work: its rows (at most 32 x 2 x rotary_dim floats) stay
// in L1/L2 while every head is rotated.
constexpr int64_t kTokenBlock = 32;

int64_t position_at(const RopeProblem& problem, int64_t b, int64_t t) {
  const posenc_rope_positions& p = problem.positions;
  if (p.ids == nullptr) return p.offset + t;
  const int64_t index = b * problem.tokens + t;
  if (p.ids_type == POSENC_ROPE_POSITIONS_INT32) return static_cast<const int32_t*>(p.ids)[index];
  return static_cast<const int64_t*>(p.ids)[index];
}

// A thread's scratch: kTokenBlock rows, then fast_rope_row's scratch.
int64_t block_scratch_floats(const RopeAngles& angles) {
  return kTokenBlock * angles.row_floats() + rope_row_scratch(angles);
}

// The rows of tokens [t0, t0 + count) of batch row b: a view of the cache
// for contiguous positions, else gathered from the cache or computed into
// the thread's scratch.
const float* block_rows(const ExecContext& ctx, const RopeAngles& angles,
                        const posenc_rope_cache* cache, const RopeProblem& problem, int64_t b,
                        int64_t t0, int64_t count, float* scratch) {
  const int64_t row_floats = angles.row_floats();
  if (cache != nullptr && problem.positions.ids == nullptr) {
    return cache->rows.data() + (problem.positions.offset + t0) * row_floats;
  }
  float* rows = scratch;
  for (int64_t t = 0; t < count; ++t) {
    const int64_t position = position_at(problem, b, t0 + t);
    float* row = rows + t * row_floats;
    if (cache != nullptr) {
      std::memcpy(row, cache->rows.data() + position * row_floats,
                  size_t(row_floats) * sizeof(float));
    } else {
      fast_rope_row(ctx, angles, position, row, rows + kTokenBlock * row_floats);
    }
  }
  return rows;
}

// Rotates tokens [t0, t0 + count) of batch row b of one tensor: per token all
// heads (BTHD), or per head all tokens (BHTD), each a contiguous run.
template <class Value>
void rotate_block(RopeRotateFn<Value> rotate, const RopeProblem& problem,
                  const RopeTensor& tensor, int64_t rotary_dim, const float* rows,
                  int64_t row_floats, int64_t b, int64_t t0, int64_t count) {
  const auto* in = static_cast<const Value*>(tensor.in);
  auto* out = static_cast<Value*>(tensor.out);
  const int64_t dim = problem.head_dim, heads = tensor.heads, tokens = problem.tokens;
  if (problem.layout == POSENC_ROPE_BTHD) {
    for (int64_t t = 0; t < count; ++t) {
      const int64_t start = (b * tokens + t0 + t) * heads * dim;
      rotate(in + start, out + start, heads, dim, rows + t * row_floats, 0, rotary_dim, dim);
    }
  } else {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t start = ((b * heads + h) * tokens + t0) * dim;
      rotate(in + start, out + start, count, dim, rows, row_floats, rotary_dim, dim);
    }
  }
}

}  // namespace

void rope_apply(const ExecContext& ctx, const RopeAngles& angles, const posenc_rope_cache* cache,
                const RopeProblem& problem, const RopeTensor* tensors, int tensor_count) {
  const int64_t blocks = ceil_div(problem.tokens, kTokenBlock);
  const int64_t rotary_dim = angles.config.rotary_dim;
  const int64_t row_floats = angles.row_floats();
  const bool interleaved = angles.config.pairing == POSENC_ROPE_INTERLEAVED;
  const RopeKernels& kernels = ctx.kernels->rope;
  const RegionScratch<float, struct RopeBlockTag> scratch(
      region_threads(ctx.num_threads, problem.batch * blocks), block_scratch_floats(angles));
  parallel_for(ctx.num_threads, problem.batch * blocks, [&](int64_t unit, int slot) {
    const int64_t b = unit / blocks;
    const int64_t t0 = (unit % blocks) * kTokenBlock;
    const int64_t count = std::min(kTokenBlock, problem.tokens - t0);
    const float* rows =
        block_rows(ctx, angles, cache, problem, b, t0, count, scratch.slot(slot));
    for (int i = 0; i < tensor_count; ++i) {
      if (problem.dtype == POSENC_F32) {
        rotate_block(interleaved ? kernels.interleaved_f32 : kernels.half_split_f32, problem,
                     tensors[i], rotary_dim, rows, row_floats, b, t0, count);
      } else {
        rotate_block(interleaved ? kernels.interleaved_bf16 : kernels.half_split_bf16, problem,
                     tensors[i], rotary_dim, rows, row_floats, b, t0, count);
      }
    }
  });
}

}  // namespace posenc::ops
