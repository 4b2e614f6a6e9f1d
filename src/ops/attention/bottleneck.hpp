// BoTNet's MHSA over a feature map (posenc/attention.h): 1x1 projection
// (with its bias), 2D-relative attention, 2x2 average pooling with stride 2,
// NCHW output. Arguments validated by the caller.
#pragma once

#include <cstddef>

#include "ops/attention/attention.hpp"
#include "ops/attention/plan.hpp"
#include "posenc/attention.h"
#include "runtime/context.hpp"

namespace posenc::ops {

// The head size of v and of the output: value_head_dim, or head_dim for 0
// (timm's dim_head_v).
inline int64_t value_head_dim(const posenc_bottleneck_desc& desc) {
  return desc.value_head_dim == 0 ? desc.head_dim : desc.value_head_dim;
}

// The block's attention on the projected tokens and its plan, and where the
// buffers lie in the workspace (byte offsets once it is aligned to 64 bytes).
struct BottleneckPlan {
  AttentionProblem attention;
  AttentionPlan attention_plan;
  size_t tokens_in;   // [batch, tokens, channels] of dtype
  size_t qkv;         // [batch, tokens, heads*(2*head_dim + value_head_dim)] of dtype,
                      // rows gemm_output_stride(.., dtype) apart
  size_t tokens_out;  // [batch, tokens, heads*value_head_dim]: of out_dtype, fp32 with stride 2
  size_t pooled;      // stride 2: [batch, tokens / 4, heads*value_head_dim] of out_dtype
  size_t attention_workspace;
  size_t workspace_bytes;
};

BottleneckPlan plan_bottleneck(const posenc_bottleneck_desc& desc, int threads);

// plan: plan_bottleneck(desc, ctx.num_threads); workspace: NULL (allocated
// here) or plan.workspace_bytes bytes.
void bottleneck_mhsa(const ExecContext& ctx, const posenc_bottleneck_desc& desc,
                     const BottleneckPlan& plan, const posenc_bottleneck_tensors& tensors,
                     void* workspace);

}  // namespace posenc::ops
