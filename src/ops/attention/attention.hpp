// Fused attention with positional bias (posenc/attention.h); arguments are
// validated by the caller (api/attention.cpp).
#pragma once

#include "ops/attention/problem.hpp"
#include "runtime/context.hpp"

namespace posenc::ops {

struct AttentionPlan;  // ops/attention/plan.hpp

// plan: plan_attention(problem, ctx.num_threads, ctx.isa); workspace: NULL (the
// op's own, runtime/workspace.hpp) or plan.workspace_bytes bytes.
void attention(const ExecContext& ctx, const AttentionProblem& problem, const AttentionPlan& plan,
               const posenc_attention_tensors& tensors, void* workspace);

}  // namespace posenc::ops
