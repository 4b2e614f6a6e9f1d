// BoTNet's MHSA over a feature map (posenc/attention.h): 1x1 projection
// (with its bias), 2D-relative attention, 2x2 average pooling with stride 2,
// NCHW output. Arguments validated by the caller.
#pragma once

#include <array>
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

// The block that runs, its attention on the projected tokens and that
// attention's plan, and where the buffers lie in the workspace (byte offsets
// once it is aligned to 64 bytes).
//
// A BF16 desc whose GEMMs oneDNN would not multiply in hardware
// (attention_gemm_dtype F32: no AVX512-BF16 or AMX, or the ISA cap below
// them) is widened: its inputs are widened to fp32 in the workspace and the
// F32 block runs on them (`block` is the desc with dtype F32), writing out in
// out_dtype. The result is the F32 block's on the same values, at oneDNN's
// fp32 rate, where the projection would otherwise run on oneDNN's bf16
// emulation or find no bf16 GEMM at all (AVX2, Arm).
struct BottleneckPlan {
  posenc_bottleneck_desc block;  // the desc, or the desc in F32 when widened
  bool widens;
  AttentionProblem attention;
  AttentionPlan attention_plan;
  size_t tokens_in;   // [batch, tokens, channels] of block.dtype
  size_t qkv;         // the projection's panels of block.dtype (projection() in
                      // bottleneck.cpp): [batch * tokens, head size] per head of q, k, v
  size_t tokens_out;  // [batch, tokens, heads*value_head_dim]: of out_dtype, fp32 with stride 2
  size_t pooled;      // stride 2: [batch, tokens / 4, heads*value_head_dim] of out_dtype
  // Per part of the projection: whether its tiles read its rows of w_qkv
  // packed once, at packed_w_qkv (parallel_matmul_packed_b_bytes; else 0
  // bytes there).
  std::array<bool, 2> packs_w_qkv{};
  std::array<size_t, 2> packed_w_qkv{};
  // Widened only (else 0 bytes each): fmap token-major in bf16 (widened
  // from there into tokens_in), and w_qkv, qkv_bias, rel_h and rel_w in fp32.
  size_t bf16_tokens, w_qkv, qkv_bias, rel_h, rel_w;
  size_t attention_workspace;
  size_t workspace_bytes;
};

BottleneckPlan plan_bottleneck(const posenc_bottleneck_desc& desc, int threads, posenc_isa isa);

// The block of plan_bottleneck(desc, ctx.num_threads, ctx.isa) on tensors of desc;
// workspace: NULL (the op's own, runtime/workspace.hpp) or plan.workspace_bytes bytes.
void bottleneck_mhsa(const ExecContext& ctx, const BottleneckPlan& plan,
                     const posenc_bottleneck_tensors& tensors, void* workspace);

}  // namespace posenc::ops
