// The fused attention's problem in internal form (strides, scales, bias) and
// the blocks it is cut into: the types every part of the attention shares.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "ops/relative/disentangled_index.hpp"
#include "ops/relative/relative_axis.hpp"
#include "posenc/attention.h"
#include "runtime/dtype.hpp"
#include "runtime/matmul.hpp"

namespace posenc::ops {

// 1/sqrt(head_dim), the usual attention scale, which the descs' init
// functions set (1 for a head_dim the call will refuse anyway).
inline float default_scale(int64_t head_dim) {
  return head_dim > 0 ? float(1.0 / std::sqrt(double(head_dim))) : 1.0f;
}

// Where row (batch b, head h, token t) of a [.., tokens, .., row] tensor
// starts: b * batch + h * head + t * token elements.
struct TokenStrides {
  int64_t batch, head, token;
};

// One batch item's share of the per-sequence options (posenc/attention.h):
// its keys [0, kv_length), queries [0, q_length), query 0 at query_offset.
struct Sequence {
  int64_t kv_length, q_length, query_offset;
};

// The shape of the additive mask of posenc/attention.h (tensors->mask, read
// in place): batch 0 means none; heads and q_len are 1 where the mask
// broadcasts over them.
struct AttentionMask {
  int64_t batch, heads, q_len;
  posenc_dtype dtype;
  // The element where the row added to the scores of query i of (batch b,
  // head h) starts, in a mask of kv_len columns.
  int64_t row_start(int64_t b, int64_t h, int64_t i, int64_t kv_len) const;
};

// A soft cap c of the softmax inputs x = softmax_scale s, in the scores'
// units: s becomes outer tanh(inner s), inner = softmax_scale / c and
// outer = c / softmax_scale (both normal floats for a valid desc).
struct SoftcapFactors {
  float inner, outer;
};
inline SoftcapFactors softcap_factors(float softmax_scale, float cap) {
  return SoftcapFactors{softmax_scale / cap, cap / softmax_scale};
}

// Whether the bias's logits are GEMMs of q against a table.
inline bool bias_reads_q(posenc_attention_bias bias) {
  return bias == POSENC_BIAS_ABSOLUTE || bias == POSENC_BIAS_RELATIVE_1D ||
         bias == POSENC_BIAS_RELATIVE_2D || bias == POSENC_BIAS_DISENTANGLED;
}

struct AttentionProblem {
  int64_t batch, heads, q_len, kv_len, head_dim;
  int64_t value_head_dim;  // of v, out and the relative values' table (q, k: head_dim)
  int64_t kv_heads;  // k and v have kv_heads heads, which divides heads
  TokenStrides q, k, v, out;
  posenc_dtype dtype, out_dtype;
  posenc_dtype gemm_dtype;  // of the GEMMs' operands: attention_gemm_dtype(dtype)
  // The scores the softmax reads are s = qk_alpha q k^T + bias + mask_alpha
  // mask, the bias's logits multiplied by bias_alpha, and the softmax takes
  // exp(softmax_scale (s - max)): set_scales.
  float qk_alpha, bias_alpha, mask_alpha, softmax_scale;
  bool causal;
  int64_t sliding_window;  // 0, or W: keys less than W from the query (causal: up to it)
  bool sinks;              // a sink logit per head joins each row's softmax
  SoftcapFactors softcap;  // a cap c of q.k's softmax inputs; outer 0: none
  int64_t query_offset;
  posenc_attention_bias bias;
  bool tables_per_head;
  int64_t max_distance;
  int64_t map_height, map_width;        // RELATIVE_2D: the query map
  int64_t kv_map_height, kv_map_width;  // and the key map (the query map's by default)
  bool query_minus_key;                 // relative_order
  bool relative_values;
  bool relative_query_bias;  // RELATIVE_1D's logits take q + u of the head
  bool bias_gate;            // TABLE_1D's, T5's and ALiBi's rows times a gate per query
  // The kinds without q (position_bias.hpp): BEiT's class token (TABLE_2D),
  // T5's buckets (and DISENTANGLED's), T5's and ALiBi's direction.
  bool class_token;
  int64_t num_buckets;
  bool bidirectional;
  // The per-sequence tensors ([batch] of index_type, each NULL when unused)
  // and the largest query offset of all sequences (the 1D table's stride).
  const void* kv_lengths;
  const void* q_lengths;
  const void* query_offsets;
  posenc_index_type index_type;
  int64_t max_query_offset;
  AttentionMask mask;

  size_t element_bytes() const { return dtype_bytes(dtype); }
  // Whether the GEMMs run in fp32 on bf16 inputs (gemm_dtype).
  bool gemms_widen_bf16() const { return gemm_dtype != dtype; }
  bool bias_reads_q() const { return ops::bias_reads_q(bias); }
  // Whether a sliding window narrower than the keys hides some of them.
  bool window_narrows() const { return sliding_window > 0 && sliding_window < kv_len; }
  // The kv head query head h reads (grouped-query attention).
  int64_t kv_head(int64_t h) const { return h / (heads / kv_heads); }
  // Whether any per-sequence tensor is given: the blocks then follow each
  // sequence's lengths, with key blocks padded to kKeyQuantum (plan.hpp).
  bool per_sequence() const {
    return kv_lengths != nullptr || q_lengths != nullptr || query_offsets != nullptr;
  }
  // DISENTANGLED's table rows.
  DisentangledIndex disentangled() const { return disentangled_index(num_buckets, max_distance); }
  // The axes of a RELATIVE_2D map: rows (table_h) and columns (table_w).
  RelativeAxis axis_h() const { return RelativeAxis{map_height, kv_map_height, query_minus_key}; }
  RelativeAxis axis_w() const { return RelativeAxis{map_width, kv_map_width, query_minus_key}; }
  // Batch item b's lengths and offset (the whole problem's without the tensors).
  Sequence sequence(int64_t b) const;
  // Keys visible to query i of sequence s: [first_visible_key(s, i),
  // visible_keys(s, i)), the first 0 without a sliding window.
  int64_t visible_keys(const Sequence& s, int64_t i) const;
  int64_t first_visible_key(const Sequence& s, int64_t i) const;
};

// The head size of v and out: desc.value_head_dim, or head_dim for 0.
inline int64_t value_head_dim(const posenc_attention_desc& desc) {
  return desc.value_head_dim == 0 ? desc.head_dim : desc.value_head_dim;
}

// The heads of k and v: desc.kv_heads, or heads for 0.
inline int64_t key_value_heads(const posenc_attention_desc& desc) {
  return desc.kv_heads == 0 ? desc.heads : desc.kv_heads;
}

// Bytes of one element of index_type.
inline size_t index_bytes(posenc_index_type type) { return type == POSENC_INDEX_INT64 ? 8 : 4; }

// Value b of a [batch] tensor of index_type.
inline int64_t index_value(const void* tensor, posenc_index_type type, int64_t b) {
  if (type == POSENC_INDEX_INT64) return static_cast<const int64_t*>(tensor)[b];
  return static_cast<const int32_t*>(tensor)[b];
}

// The type of the attention's GEMM operands for inputs of `dtype`: dtype, or
// F32 for BF16 where oneDNN's bf16 GEMMs are not faster than its fp32 ones
// (bf16_gemms_outpace_fp32): the attention then widens q, k, v and the
// table rows its GEMMs read to fp32 as it reads them (widen.hpp), the same
// bf16 values multiplied exactly.
inline posenc_dtype attention_gemm_dtype(posenc_dtype dtype) {
  return dtype == POSENC_BF16 && !bf16_gemms_outpace_fp32() ? POSENC_F32 : dtype;
}

// The row stride of every GEMM output the attention writes, for GEMMs of
// ab_type inputs: dense, which the AMX path needs, but for the widths oneDNN
// 2.6.3 gets wrong in bf16 (runtime/matmul.hpp), which get a longer stride
// instead of matmul's copy. fp32 stays dense: a longer stride sends oneDNN
// from its brgemm kernels to its older, slower gemm for small outputs.
inline int64_t gemm_output_stride(int64_t columns, posenc_dtype ab_type) {
  return ab_type == POSENC_BF16 && onednn_bf16_dense_width_is_broken(columns) ? 64 : columns;
}

// softmax(scale q k^T + bias) with the position logits from scale q or q.
// A positive scale is left to the softmax (scores in units of 1/scale):
// oneDNN's AMX GEMM runs slower with an output scale.
void set_scales(AttentionProblem& problem, float scale, bool bias_uses_scaled_q);
// The scale the softmax applies for a desc's scale (set_scales).
float softmax_scale_of(float scale);

// The problem of a validated desc, with the strides of its layout (BHTD and
// BTHD are presets; STRIDED takes the desc's), k and v with kv_heads heads.
// With tensors, also their per-sequence tensors, whose largest query offset
// is max_query_offset; without, none (the workspace does not depend on them).
AttentionProblem make_attention_problem(const posenc_attention_desc& desc,
                                        const posenc_attention_tensors* tensors = nullptr,
                                        int64_t max_query_offset = 0);

// Table rows [first, first + count).
struct RowWindow {
  int64_t first, count;
};

// Queries [first, first + rows) of one (batch, head): q points at the first
// one, with row stride ldq. rows are those the block computes
// (computed_rows, plan.hpp): fewer than its rows of out where its sequence
// ends in it.
struct QueryBlock {
  int64_t head;
  int64_t query_offset;  // the position of query 0 of the block's sequence
  const void* q;
  int64_t ldq;
  int64_t first, rows;
  int64_t batch;
};

struct KeyBlock {
  int64_t first, count;
};

}  // namespace posenc::ops
