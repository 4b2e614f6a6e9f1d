#include "ops/attention/bottleneck.hpp"

#include <algorithm>
#include <cstdint>

#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"
#include "runtime/dtype.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// The attention of the block on the projected tokens: q, k and v interleaved
// in rows of 3*heads*head_dim (token-major), output token-major.
AttentionProblem attention_problem(const posenc_bottleneck_desc& d) {
  const int64_t tokens = d.height * d.width, inner = d.heads * d.head_dim;
  const int64_t ld = gemm_output_stride(3 * inner);
  AttentionProblem p{};
  p.batch = d.batch;
  p.heads = p.kv_heads = d.heads;
  p.q_len = p.kv_len = tokens;
  p.head_dim = d.head_dim;
  p.q = p.k = p.v = TokenStrides{tokens * ld, d.head_dim, ld};
  p.out = TokenStrides{tokens * inner, d.head_dim, inner};
  p.dtype = d.dtype;
  p.out_dtype = d.out_dtype;
  p.bias = POSENC_BIAS_RELATIVE_2D;
  p.tables_per_head = d.tables_per_head != 0;
  set_scales(p, d.scale, true);  // BoTNet: logits from the scaled q
  p.map_height = d.height;
  p.map_width = d.width;
  return p;
}

// dst[b] = src[b]^T for b < batch, src[b] of [rows, cols] (element_bytes
// 2 or 4), in bands of rows over the threads.
void transpose_batch(const ExecContext& ctx, int64_t batch, int64_t rows, int64_t cols,
                     size_t element_bytes, const void* src, void* dst) {
  constexpr int64_t band = 64;
  const int64_t bands = (rows + band - 1) / band;
  parallel_for(ctx.num_threads, batch * bands, [&](int64_t task) {
    const int64_t b = task / bands, r0 = task % bands * band;
    const int64_t count = std::min(band, rows - r0);
    const size_t first = size_t(b * rows * cols + r0 * cols);  // src element (b, r0, 0)
    const size_t target = size_t(b * rows * cols + r0);        // dst element (b, 0, r0)
    if (element_bytes == 2) {
      ctx.kernels->attention.transpose_16(static_cast<const uint16_t*>(src) + first, count,
                                          cols, cols, static_cast<uint16_t*>(dst) + target,
                                          rows);
    } else {
      ctx.kernels->attention.transpose_32(static_cast<const uint32_t*>(src) + first, count,
                                          cols, cols, static_cast<uint32_t*>(dst) + target,
                                          rows);
    }
  });
}

}  // namespace

BottleneckPlan plan_bottleneck(const posenc_bottleneck_desc& d, int threads) {
  const size_t tokens = size_t(d.batch * d.height * d.width);
  const size_t inner = size_t(d.heads * d.head_dim), es = dtype_bytes(d.dtype);
  BottleneckPlan plan;
  plan.attention = attention_problem(d);
  plan.attention_plan = plan_attention(plan.attention, threads);
  plan.tokens_in = 0;
  plan.qkv = plan.tokens_in + workspace_aligned(tokens * size_t(d.channels) * es);
  plan.tokens_out =
      plan.qkv + workspace_aligned(tokens * size_t(gemm_output_stride(3 * int64_t(inner))) * es);
  plan.attention_workspace =
      plan.tokens_out + workspace_aligned(tokens * inner * dtype_bytes(d.out_dtype));
  plan.workspace_bytes =
      plan.attention_workspace + plan.attention_plan.workspace_bytes + kWorkspaceAlign;
  return plan;
}

void bottleneck_mhsa(const ExecContext& ctx, const posenc_bottleneck_desc& d,
                     const BottleneckPlan& plan, const void* fmap, const void* w_qkv,
                     const void* rel_h, const void* rel_w, void* out, void* workspace) {
  const Workspace memory(workspace, plan.workspace_bytes);
  uint8_t* base = memory.base();
  const int64_t tokens = d.height * d.width, inner = d.heads * d.head_dim;
  const size_t es = dtype_bytes(d.dtype);

  // NCHW to token-major, then qkv[b] = tokens[b] W_qkv^T (the 1x1 convolution).
  transpose_batch(ctx, d.batch, d.channels, tokens, es, fmap, base + plan.tokens_in);
  MatmulShape s;
  s.batch = d.batch;
  s.m = tokens;
  s.n = 3 * inner;
  s.k = d.channels;
  s.lda = s.ldb = d.channels;
  s.ldc = gemm_output_stride(3 * inner);
  s.batch_stride_a = tokens * d.channels;
  s.batch_stride_c = tokens * s.ldc;
  s.transpose_b = true;
  s.ab_type = s.c_type = d.dtype;
  {
    const OpenMpThreads threads(ctx.num_threads);
    matmul(s, base + plan.tokens_in, w_qkv, base + plan.qkv);
  }

  posenc_attention_tensors t{};
  t.q = base + plan.qkv;
  t.k = base + plan.qkv + size_t(inner) * es;
  t.v = base + plan.qkv + size_t(2 * inner) * es;
  t.table_h = rel_h;
  t.table_w = rel_w;
  t.out = base + plan.tokens_out;
  attention(ctx, plan.attention, plan.attention_plan, t, base + plan.attention_workspace);
  transpose_batch(ctx, d.batch, tokens, inner, dtype_bytes(d.out_dtype), base + plan.tokens_out, out);
}

}  // namespace posenc::ops
