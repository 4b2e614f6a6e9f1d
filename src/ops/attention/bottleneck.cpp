#include "ops/attention/bottleneck.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "posenc/core.h"
#include "runtime/ceil_div.hpp"
#include "runtime/dtype.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"
#include "runtime/parallel_matmul.hpp"
#include "runtime/phase_times.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// Channels of the projection: q and k of heads*head_dim each (timm's
// dim_out_qk), then v of heads*value_head_dim (dim_out_v), as timm splits them.
int64_t qk_channels(const posenc_bottleneck_desc& d) { return d.heads * d.head_dim; }
int64_t v_channels(const posenc_bottleneck_desc& d) { return d.heads * value_head_dim(d); }
int64_t qkv_channels(const posenc_bottleneck_desc& d) {
  return 2 * qk_channels(d) + v_channels(d);
}

// Elements of the table of an axis of map_size positions: rel_h (height) or
// rel_w (width).
int64_t table_elements(const posenc_bottleneck_desc& d, int64_t map_size) {
  return (d.tables_per_head ? d.heads : 1) * (2 * map_size - 1) * d.head_dim;
}

// The projection of plan_bottleneck's block, its packed w_qkv not yet
// placed.
Projection projection_of(const posenc_bottleneck_desc& d, bool with_qkv_bias) {
  const int64_t tokens = d.batch * d.height * d.width;
  const bool one_part = value_head_dim(d) == d.head_dim;
  Projection proj{};
  const auto add = [&](int64_t panels, int64_t width, int64_t first_column) {
    ProjectionPart& part = proj.parts[size_t(proj.count++)];
    MatmulShape& s = part.shape;
    s.batch = panels;
    s.m = tokens;
    s.n = width;
    s.k = d.channels;
    s.lda = s.ldb = d.channels;
    s.ldc = gemm_output_stride(width, d.dtype);
    s.batch_stride_b = width * d.channels;
    s.batch_stride_c = tokens * s.ldc;
    s.transpose_b = true;
    s.ab_type = s.c_type = d.dtype;
    s.accumulate = with_qkv_bias;  // onto the bias rows
    part.first_column = first_column;
    part.offset = proj.bytes;
    proj.bytes += workspace_aligned(size_t(panels * s.batch_stride_c) * dtype_bytes(d.dtype));
  };
  add(d.heads * (one_part ? 3 : 2), d.head_dim, 0);
  if (!one_part) add(d.heads, value_head_dim(d), 2 * qk_channels(d));
  return proj;
}

enum class Projected { kQ, kK, kV };

// Where a projected tensor lies: the byte offset of its first head's panel
// in the qkv buffer, and the strides of its heads' rows.
struct ProjectedTensor {
  size_t offset;
  TokenStrides strides;
};
ProjectedTensor projected(const posenc_bottleneck_desc& d, const Projection& proj,
                          Projected tensor) {
  const bool own_part = tensor == Projected::kV && proj.count == 2;
  const ProjectionPart& part = proj.parts[own_part ? 1 : 0];
  const MatmulShape& s = part.shape;
  const int64_t first_panel = own_part ? 0 : int64_t(tensor) * d.heads;
  return ProjectedTensor{
      part.offset + size_t(first_panel * s.batch_stride_c) * dtype_bytes(d.dtype),
      TokenStrides{d.height * d.width * s.ldc, s.batch_stride_c, s.ldc}};
}

// The attention of the block on the projected heads, output token-major
// (in fp32 when it is pooled afterwards, so that the pooled output is
// rounded once).
AttentionProblem attention_problem(const posenc_bottleneck_desc& d, const Projection& proj) {
  const int64_t tokens = d.height * d.width, inner = v_channels(d);
  AttentionProblem p{};
  p.batch = d.batch;
  p.heads = p.kv_heads = d.heads;
  p.q_len = p.kv_len = tokens;
  p.head_dim = d.head_dim;
  p.value_head_dim = value_head_dim(d);
  p.q = projected(d, proj, Projected::kQ).strides;
  p.k = projected(d, proj, Projected::kK).strides;
  p.v = projected(d, proj, Projected::kV).strides;
  p.out = TokenStrides{tokens * inner, p.value_head_dim, inner};
  p.dtype = d.dtype;
  p.out_dtype = d.stride == 2 ? POSENC_F32 : d.out_dtype;
  p.gemm_dtype = attention_gemm_dtype(d.dtype);
  p.bias = POSENC_BIAS_RELATIVE_2D;
  p.tables_per_head = d.tables_per_head != 0;
  set_scales(p, d.scale, d.bias_uses_scaled_q != 0);
  p.map_height = d.height;
  p.map_width = d.width;
  p.kv_map_height = d.height;
  p.kv_map_width = d.width;
  return p;
}

// dst[b] = src[b]^T for b < batch, src[b] of [rows, cols] (element_bytes
// 2 or 4), in bands of rows over the threads.
void transpose_batch(const ExecContext& ctx, int64_t batch, int64_t rows, int64_t cols,
                     size_t element_bytes, const void* src, void* dst) {
  constexpr int64_t band = 64;
  const int64_t bands = ceil_div(rows, band);
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

// Every row of a projection part's panels set to the bias of its columns,
// which the projection then accumulates onto (bias and qkv of one dtype).
void write_bias_rows(const ExecContext& ctx, const ProjectionPart& part, size_t element_bytes,
                     const void* bias, uint8_t* qkv) {
  constexpr int64_t band = 64;
  const MatmulShape& s = part.shape;
  const int64_t bands = ceil_div(s.m, band);
  const size_t row_bytes = size_t(s.n) * element_bytes;
  parallel_for(ctx.num_threads, s.batch * bands, [&](int64_t task) {
    const int64_t panel = task / bands, first = task % bands * band;
    const auto* panel_bias =  // the panel's first column's
        static_cast<const uint8_t*>(bias) + size_t(part.first_column + panel * s.n) * element_bytes;
    for (int64_t r = first; r < std::min(s.m, first + band); ++r) {
      const int64_t at = panel * s.batch_stride_c + r * s.ldc;  // the row's first element
      std::memcpy(qkv + part.offset + size_t(at) * element_bytes, panel_bias, row_bytes);
    }
  });
}

// `count` bf16 values at `from` widened to fp32 at `to`.
struct Widening {
  const void* from;
  int64_t count;
  float* to;
};

// Every widening in chunks, in one region over the threads.
template <size_t N>
void widen_all(const ExecContext& ctx, const std::array<Widening, N>& widenings) {
  constexpr int64_t chunk = 4096;
  // Widening i's chunks are tasks [first_task[i], first_task[i + 1]).
  std::array<int64_t, N + 1> first_task{};
  for (size_t i = 0; i < N; ++i) {
    first_task[i + 1] = first_task[i] + ceil_div(widenings[i].count, chunk);
  }
  parallel_for(ctx.num_threads, first_task[N], [&](int64_t task) {
    size_t i = 0;
    while (task >= first_task[i + 1]) ++i;
    const Widening& w = widenings[i];
    const int64_t first = (task - first_task[i]) * chunk;
    ctx.kernels->elementwise.bf16_to_f32(static_cast<const uint16_t*>(w.from) + first, w.to + first,
                                         std::min(chunk, w.count - first));
  });
}

// A widened block's inputs in fp32 in the workspace: fmap made token-major
// in bf16, then widened into tokens_in, and w_qkv, qkv_bias, rel_h and
// rel_w widened into their buffers. Returns the tensors the F32 block reads
// (its fmap already in tokens_in: none).
posenc_bottleneck_tensors widen_inputs(const ExecContext& ctx, const BottleneckPlan& plan,
                                       const posenc_bottleneck_tensors& tensors, uint8_t* base) {
  const posenc_bottleneck_desc& d = plan.block;
  const int64_t tokens = d.height * d.width;
  transpose_batch(ctx, d.batch, d.channels, tokens, dtype_bytes(POSENC_BF16), tensors.fmap,
                  base + plan.bf16_tokens);
  const auto at = [base](size_t offset) { return reinterpret_cast<float*>(base + offset); };
  const bool qkv_bias = tensors.qkv_bias != nullptr;
  widen_all(ctx, std::array<Widening, 5>{
                     {{base + plan.bf16_tokens, d.batch * tokens * d.channels, at(plan.tokens_in)},
                      {tensors.w_qkv, qkv_channels(d) * d.channels, at(plan.w_qkv)},
                      {tensors.qkv_bias, qkv_bias ? qkv_channels(d) : 0, at(plan.qkv_bias)},
                      {tensors.rel_h, table_elements(d, d.height), at(plan.rel_h)},
                      {tensors.rel_w, table_elements(d, d.width), at(plan.rel_w)}}});
  posenc_bottleneck_tensors widened = tensors;
  widened.fmap = nullptr;
  widened.w_qkv = at(plan.w_qkv);
  widened.qkv_bias = qkv_bias ? at(plan.qkv_bias) : nullptr;
  widened.rel_h = at(plan.rel_h);
  widened.rel_w = at(plan.rel_w);
  return widened;
}

// timm's AvgPool2d(2, 2) over token-major fp32 maps [batch, X, Y, inner]:
// pooled[b, (px, py)] = (t(2px, 2py) + t(2px, 2py+1) + t(2px+1, 2py) +
// t(2px+1, 2py+1)) / 4, summed in that order, in out_dtype, for px < X/2,
// py < Y/2 (an odd map's last row and column are dropped). The sums are made
// in place in `tokens`.
void average_pool_2x2(const ExecContext& ctx, const posenc_bottleneck_desc& d, float* tokens,
                      void* pooled) {
  const int64_t inner = v_channels(d), px_count = d.height / 2, py_count = d.width / 2;
  const ElementwiseKernels& elementwise = ctx.kernels->elementwise;
  parallel_for(ctx.num_threads, d.batch * px_count, [&](int64_t task) {
    const int64_t b = task / px_count, px = task % px_count;
    for (int64_t py = 0; py < py_count; ++py) {
      float* top = tokens + ((b * d.height + 2 * px) * d.width + 2 * py) * inner;
      const float* bottom = top + d.width * inner;
      elementwise.add_f32(top, top + inner, top, inner);
      elementwise.add_f32(top, bottom, top, inner);
      elementwise.add_f32(top, bottom + inner, top, inner);
      const int64_t row = (b * px_count + px) * py_count + py;
      if (d.out_dtype == POSENC_BF16) {
        ctx.kernels->attention.scale_to_bf16(top, 0.25f,
                                             static_cast<uint16_t*>(pooled) + row * inner, inner);
      } else {
        ctx.kernels->attention.scale_f32(top, 0.25f, static_cast<float*>(pooled) + row * inner,
                                         inner);
      }
    }
  });
}

}  // namespace

BottleneckPlan plan_bottleneck(const posenc_bottleneck_desc& desc, bool with_qkv_bias, int threads,
                               posenc_isa isa) {
  BottleneckPlan plan;
  plan.block = desc;
  plan.block.dtype = attention_gemm_dtype(desc.dtype);
  plan.widens = plan.block.dtype != desc.dtype;
  plan.with_qkv_bias = with_qkv_bias;
  const posenc_bottleneck_desc& d = plan.block;
  const size_t tokens = size_t(d.batch * d.height * d.width);
  const size_t inner = size_t(v_channels(d)), es = dtype_bytes(d.dtype);
  plan.projection = projection_of(d, with_qkv_bias);
  plan.attention = attention_problem(d, plan.projection);
  plan.attention_plan = plan_attention(plan.attention, threads, isa);
  plan.tokens_in = 0;
  plan.qkv = plan.tokens_in + workspace_aligned(tokens * size_t(d.channels) * es);
  plan.tokens_out = plan.qkv + plan.projection.bytes;
  const size_t pooled_tokens = d.stride == 2 ? size_t(d.batch * (d.height / 2) * (d.width / 2)) : 0;
  plan.pooled = plan.tokens_out +
                workspace_aligned(tokens * inner * dtype_bytes(plan.attention.out_dtype));
  size_t end = plan.pooled + workspace_aligned(pooled_tokens * inner * dtype_bytes(d.out_dtype));
  // w_qkv packed once per part for the projection's tiles: on one core of
  // a 2-core Sapphire Rapids (B8 C512 14x14 H4 d128) the bf16 tiles ran at
  // 900-910 GFLOP/s on it and 570-700 on their own copies, the fp32 ones at
  // 149-154 and 140-148; on a 2-core Zen 5 the fp32 block ran 9% faster for
  // it on 1 and 2 threads (0-4% with oneDNN capped at AVX2).
  for (int i = 0; i < plan.projection.count; ++i) {
    ProjectionPart& part = plan.projection.parts[size_t(i)];
    const size_t bytes = parallel_matmul_packed_b_bytes(part.shape);
    part.packs_w_qkv = bytes > 0;
    part.packed_w_qkv = end;
    end += workspace_aligned(bytes);
  }
  // The widened inputs follow, each of `bytes` when widened, else empty.
  const auto widened = [&](size_t bytes) {
    const size_t at = end;
    end += plan.widens ? workspace_aligned(bytes) : 0;
    return at;
  };
  plan.bf16_tokens = widened(tokens * size_t(d.channels) * dtype_bytes(POSENC_BF16));
  plan.w_qkv = widened(size_t(qkv_channels(d) * d.channels) * sizeof(float));
  plan.qkv_bias = widened(size_t(qkv_channels(d)) * sizeof(float));
  plan.rel_h = widened(size_t(table_elements(d, d.height)) * sizeof(float));
  plan.rel_w = widened(size_t(table_elements(d, d.width)) * sizeof(float));
  plan.attention_workspace = end;
  plan.workspace_bytes =
      plan.attention_workspace + plan.attention_plan.workspace_bytes + kWorkspaceAlign;
  return plan;
}

size_t bottleneck_workspace_bytes(const posenc_bottleneck_desc& desc, int threads, posenc_isa isa) {
  return std::max(plan_bottleneck(desc, false, threads, isa).workspace_bytes,
                  plan_bottleneck(desc, true, threads, isa).workspace_bytes);
}

void bottleneck_mhsa(const ExecContext& ctx, const BottleneckPlan& plan,
                     const posenc_bottleneck_tensors& tensors, void* workspace) {
  const Workspace memory(workspace, plan.workspace_bytes, ctx.num_threads);
  uint8_t* base = memory.base();
  const posenc_bottleneck_desc& d = plan.block;
  const int64_t tokens = d.height * d.width, inner = v_channels(d);
  const size_t es = dtype_bytes(d.dtype);

  // NCHW to token-major (widened: with the other inputs), then the
  // projection (onto the bias rows).
  const bool timed = phase_times_enabled();  // (read once: a call is timed wholly or not)
  PhaseScope step(Phase::kMapToTokens, timed);
  posenc_bottleneck_tensors in = tensors;
  if (plan.widens) {
    in = widen_inputs(ctx, plan, tensors, base);
  } else {
    transpose_batch(ctx, d.batch, d.channels, tokens, es, tensors.fmap, base + plan.tokens_in);
  }
  step.end();
  PhaseScope projecting(Phase::kProjection, timed);
  const Projection& proj = plan.projection;
  for (int i = 0; i < proj.count; ++i) {
    const ProjectionPart& part = proj.parts[size_t(i)];
    const auto* w =
        static_cast<const uint8_t*>(in.w_qkv) + size_t(part.first_column * d.channels) * es;
    if (plan.with_qkv_bias) write_bias_rows(ctx, part, es, in.qkv_bias, base + plan.qkv);
    parallel_matmul(ctx.num_threads, part.shape, base + plan.tokens_in, w,
                    base + plan.qkv + part.offset,
                    part.packs_w_qkv ? base + part.packed_w_qkv : nullptr);
  }
  projecting.end();

  posenc_attention_tensors t{};
  t.q = base + plan.qkv + projected(d, proj, Projected::kQ).offset;
  t.k = base + plan.qkv + projected(d, proj, Projected::kK).offset;
  t.v = base + plan.qkv + projected(d, proj, Projected::kV).offset;
  t.table_h = in.rel_h;
  t.table_w = in.rel_w;
  t.out = base + plan.tokens_out;
  attention(ctx, plan.attention, plan.attention_plan, t, base + plan.attention_workspace);
  const void* result = base + plan.tokens_out;
  int64_t result_tokens = tokens;
  if (d.stride == 2) {
    const PhaseScope pool(Phase::kPool, timed);
    average_pool_2x2(ctx, d, reinterpret_cast<float*>(base + plan.tokens_out), base + plan.pooled);
    result = base + plan.pooled;
    result_tokens = (d.height / 2) * (d.width / 2);
  }
  const PhaseScope to_map(Phase::kTokensToMap, timed);
  transpose_batch(ctx, d.batch, result_tokens, inner, dtype_bytes(d.out_dtype), result,
                  tensors.out);
}

}  // namespace posenc::ops
