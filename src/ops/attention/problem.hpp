// The fused attention's problem in internal form (strides, scales, bias) and
// the blocks it is cut into: the types every part of the attention shares.
#pragma once

#include <cstddef>
#include <cstdint>

#include "posenc/attention.h"
#include "runtime/dtype.hpp"
#include "runtime/matmul.hpp"

namespace posenc::ops {

// Where row (batch b, head h, token t) of a [.., tokens, .., head_dim] tensor
// starts: b * batch + h * head + t * token elements.
struct TokenStrides {
  int64_t batch, head, token;
};

struct AttentionProblem {
  int64_t batch, heads, q_len, kv_len, head_dim;
  int64_t kv_heads;  // k and v have kv_heads heads, which divides heads
  TokenStrides q, k, v, out;
  posenc_dtype dtype, out_dtype;
  // The scores the softmax reads are s = qk_alpha q k^T + bias, the bias's
  // logits multiplied by bias_alpha, and the softmax takes
  // exp(softmax_scale (s - max)): set_scales.
  float qk_alpha, bias_alpha, softmax_scale;
  bool causal;
  int64_t query_offset;
  posenc_attention_bias bias;
  bool tables_per_head;
  int64_t max_distance;
  int64_t map_height, map_width;
  bool relative_values;

  size_t element_bytes() const { return dtype_bytes(dtype); }
  // The kv head query head h reads (grouped-query attention).
  int64_t kv_head(int64_t h) const { return h / (heads / kv_heads); }
  // Keys visible to query i: [0, visible_keys(i)).
  int64_t visible_keys(int64_t i) const;
};

// The row stride of every GEMM output the attention writes: dense, which the
// AMX path needs, but for the widths oneDNN 2.6.3 gets wrong in bf16
// (runtime/matmul.hpp), which get a longer stride instead of matmul's copy.
inline int64_t gemm_output_stride(int64_t columns) {
  return onednn_bf16_dense_width_is_broken(columns) ? 64 : columns;
}

// softmax(scale q k^T + bias) with the position logits from scale q or q.
// A positive scale is left to the softmax (scores in units of 1/scale):
// oneDNN's AMX GEMM runs slower with an output scale.
void set_scales(AttentionProblem& problem, float scale, bool bias_uses_scaled_q);

// The problem of a validated desc, with the strides of its layout (BHTD and
// BTHD are presets; STRIDED takes the desc's), k and v with kv_heads heads.
AttentionProblem make_attention_problem(const posenc_attention_desc& desc);

// Table rows [first, first + count).
struct RowWindow {
  int64_t first, count;
};

// Queries [first, first + rows) of one (batch, head): q points at the first
// one, with row stride ldq.
struct QueryBlock {
  int64_t head;
  const void* q;
  int64_t ldq;
  int64_t first, rows;
};

struct KeyBlock {
  int64_t first, count;
};

}  // namespace posenc::ops
