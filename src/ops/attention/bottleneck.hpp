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
#include "runtime/matmul.hpp"

namespace posenc::ops {

// The head size of v and of the output: value_head_dim, or head_dim for 0
// (timm's dim_head_v).
inline int64_t value_head_dim(const posenc_bottleneck_desc& desc) {
  return desc.value_head_dim == 0 ? desc.head_dim : desc.value_head_dim;
}

// The 1x1 convolution qkv = tokens W_qkv^T over the whole batch's tokens
// (of the widened inputs where the block widens) as batches of column
// panels, one per head of q, of k and of v, each [batch * tokens, head
// size] with rows gemm_output_stride(head size) apart: the attention reads
// each head's rows dense, and parallel_matmul's tiles span their C's rows,
// where oneDNN 2.6 runs its brgemm kernels (AMX among them; a bf16 width
// it pads to 64, or a head of over 256 columns, still gets its gemm:jit).
// Part 0 is q's and k's panels of head_dim columns, and v's where
// value_head_dim is the same; else part 1 is v's.
struct ProjectionPart {
  MatmulShape shape;     // a batch of panels over the same tokens (A broadcast)
  int64_t first_column;  // of the qkv channels: panel p's is first_column + p * shape.n
  size_t offset;         // bytes into the qkv buffer
  // Whether its tiles read its rows of w_qkv packed once
  // (parallel_matmul_packed_b_bytes not 0), at packed_w_qkv in the workspace.
  bool packs_w_qkv;
  size_t packed_w_qkv;
};
struct Projection {
  std::array<ProjectionPart, 2> parts;
  int count;
  size_t bytes;  // of the qkv buffer
};

// The block that runs, its attention on the projected tokens and that
// attention's plan, and where the buffers lie in the workspace (byte offsets
// once it is aligned to 64 bytes).
//
// A BF16 desc whose GEMMs would not outpace fp32 ones (attention_gemm_dtype
// F32: no AVX512-BF16 or AMX, Intel's AVX512-BF16 without AMX, or the ISA
// cap below them) is widened: its inputs are widened to fp32 in the
// workspace and the F32 block runs on them (`block` is the desc with dtype
// F32), writing out in out_dtype. The result is the F32 block's on the same
// values, at oneDNN's fp32 rate, where the projection would otherwise run on
// oneDNN's slower bf16 GEMM or its emulation, or find no bf16 GEMM at all
// (AVX2, Arm).
struct BottleneckPlan {
  posenc_bottleneck_desc block;  // the desc, or the desc in F32 when widened
  bool widens;
  // The call adds a qkv bias: its rows are written first and the
  // projection's GEMMs accumulate onto them, rounding qkv once (as a bf16
  // nn.Conv2d with a bias does).
  bool with_qkv_bias;
  AttentionProblem attention;
  AttentionPlan attention_plan;
  size_t tokens_in;   // [batch, tokens, channels] of block.dtype
  Projection projection;
  size_t qkv;         // the projection's panels, of block.dtype
  size_t tokens_out;  // [batch, tokens, heads*value_head_dim]: of out_dtype, fp32 with stride 2
  size_t pooled;      // stride 2: [batch, tokens / 4, heads*value_head_dim] of out_dtype
  // Widened only (else 0 bytes each): fmap token-major in bf16 (widened
  // from there into tokens_in), and w_qkv, qkv_bias, rel_h and rel_w in fp32.
  size_t bf16_tokens, w_qkv, qkv_bias, rel_h, rel_w;
  size_t attention_workspace;
  size_t workspace_bytes;
};

BottleneckPlan plan_bottleneck(const posenc_bottleneck_desc& desc, bool with_qkv_bias, int threads,
                               posenc_isa isa);

// The workspace a call of desc needs with or without a qkv bias (oneDNN's
// packed layouts, hence their sizes, may differ between the two GEMMs).
size_t bottleneck_workspace_bytes(const posenc_bottleneck_desc& desc, int threads, posenc_isa isa);

// The block of plan_bottleneck(desc, tensors.qkv_bias != NULL, ctx.num_threads, ctx.isa)
// on tensors of desc;
// workspace: NULL (the op's own, runtime/workspace.hpp) or plan.workspace_bytes bytes.
void bottleneck_mhsa(const ExecContext& ctx, const BottleneckPlan& plan,
                     const posenc_bottleneck_tensors& tensors, void* workspace);

}  // namespace posenc::ops
