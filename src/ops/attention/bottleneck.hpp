// BoTNet's MHSA over a feature map (posenc/attention.h): 1x1 projection,
// 2D-relative attention, NCHW output. Arguments validated by the caller.
#pragma once

#include <cstddef>

#include "ops/attention/attention.hpp"
#include "ops/attention/plan.hpp"
#include "posenc/attention.h"
#include "runtime/context.hpp"

namespace posenc::ops {

// The block's attention on the projected tokens and its plan, and where the
// buffers lie in the workspace (byte offsets once it is aligned to 64 bytes).
struct BottleneckPlan {
  AttentionProblem attention;
  AttentionPlan attention_plan;
  size_t tokens_in;   // [batch, tokens, channels] of dtype
  size_t qkv;         // [batch, tokens, 3*inner] of dtype, rows gemm_output_stride() apart
  size_t tokens_out;  // [batch, tokens, inner] of out_dtype
  size_t attention_workspace;
  size_t workspace_bytes;
};

BottleneckPlan plan_bottleneck(const posenc_bottleneck_desc& desc, int threads);

// plan: plan_bottleneck(desc, ctx.num_threads); workspace: NULL (allocated
// here) or plan.workspace_bytes bytes.
void bottleneck_mhsa(const ExecContext& ctx, const posenc_bottleneck_desc& desc,
                     const BottleneckPlan& plan, const void* fmap, const void* w_qkv,
                     const void* rel_h, const void* rel_w, void* out, void* workspace);

}  // namespace posenc::ops
