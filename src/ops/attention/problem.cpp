#include "ops/attention/problem.hpp"

#include <algorithm>

namespace posenc::ops {
namespace {

TokenStrides layout_strides(posenc_attention_layout layout, int64_t heads, int64_t tokens,
                            int64_t head_dim) {
  if (layout == POSENC_LAYOUT_BTHD) {
    return TokenStrides{tokens * heads * head_dim, head_dim, heads * head_dim};
  }
  return TokenStrides{heads * tokens * head_dim, tokens * head_dim, head_dim};
}

// The strides of one tensor of `heads` heads and `tokens` tokens of `row`
// elements (head_dim, or value_head_dim for v and out).
TokenStrides strides_of(const posenc_attention_desc& d, const posenc_token_strides& given,
                        int64_t heads, int64_t tokens, int64_t row) {
  if (d.layout != POSENC_LAYOUT_STRIDED) return layout_strides(d.layout, heads, tokens, row);
  TokenStrides s{given.batch, given.head, given.token};
  // One token's stride only ever multiplies 0, but it is a GEMM's row stride,
  // which oneDNN wants at least as long as the row.
  if (tokens == 1) s.token = std::max(s.token, row);
  return s;
}

}  // namespace

Sequence AttentionProblem::sequence(int64_t b) const {
  return Sequence{kv_lengths ? index_value(kv_lengths, index_type, b) : kv_len,
                  q_lengths ? index_value(q_lengths, index_type, b) : q_len,
                  query_offsets ? index_value(query_offsets, index_type, b) : query_offset};
}

int64_t AttentionProblem::visible_keys(const Sequence& s, int64_t i) const {
  const int64_t position = s.query_offset + i;  // |offset| <= 2^40: no overflow
  if (causal) return std::clamp<int64_t>(position + 1, 0, s.kv_length);
  // A window on both sides ends W - 1 keys after the position (W compared
  // first: position + W could overflow).
  if (sliding_window == 0 || sliding_window >= s.kv_length - position) return s.kv_length;
  return std::max<int64_t>(position + sliding_window, 0);
}

int64_t AttentionProblem::first_visible_key(const Sequence& s, int64_t i) const {
  const int64_t position = s.query_offset + i;  // |offset| <= 2^40: no overflow
  // (A window past the position shows every key; compared first, as
  // position - W could overflow for W near 2^63.)
  if (sliding_window == 0 || sliding_window > position) return 0;
  return std::min(position - sliding_window + 1, s.kv_length);
}

int64_t AttentionMask::row_start(int64_t b, int64_t h, int64_t i, int64_t kv_len) const {
  return (((b % batch) * heads + (heads == 1 ? 0 : h)) * q_len + (q_len == 1 ? 0 : i)) * kv_len;
}

// The smallest scale the softmax applies: mask and bias values are divided
// by it first (times 2^24 at most: finite for values up to 2e31, where
// 1 / 1e-40 alone overflows). Smaller scales, like 0 and negative ones,
// are oneDNN's output scale of q k^T (qk_alpha).
constexpr float kMinSoftmaxScale = 0x1p-24f;

float softmax_scale_of(float scale) { return scale >= kMinSoftmaxScale ? scale : 1.0f; }

void set_scales(AttentionProblem& p, float scale, bool bias_uses_scaled_q) {
  p.softmax_scale = softmax_scale_of(scale);
  p.qk_alpha = scale / p.softmax_scale;
  p.bias_alpha = (bias_uses_scaled_q ? scale : 1.0f) / p.softmax_scale;
  // The mask is in softmax-input units: mask / softmax_scale here, which the
  // softmax multiplies back (to fp32 rounding; exactly below
  // kMinSoftmaxScale or for a power of 2).
  p.mask_alpha = 1.0f / p.softmax_scale;
}

AttentionProblem make_attention_problem(const posenc_attention_desc& d,
                                        const posenc_attention_tensors* t,
                                        int64_t max_query_offset) {
  AttentionProblem p;
  p.batch = d.batch;
  p.heads = d.heads;
  p.q_len = d.q_len;
  p.kv_len = d.kv_len;
  p.head_dim = d.head_dim;
  p.value_head_dim = value_head_dim(d);
  p.kv_heads = key_value_heads(d);
  p.q = strides_of(d, d.q_strides, d.heads, d.q_len, d.head_dim);
  p.out = strides_of(d, d.out_strides, d.heads, d.q_len, p.value_head_dim);
  p.k = strides_of(d, d.k_strides, p.kv_heads, d.kv_len, d.head_dim);
  p.v = strides_of(d, d.v_strides, p.kv_heads, d.kv_len, p.value_head_dim);
  p.dtype = d.dtype;
  p.out_dtype = d.out_dtype;
  p.gemm_dtype = attention_gemm_dtype(d.dtype);
  p.causal = d.causal != 0;
  p.sliding_window = d.sliding_window;
  p.sinks = d.sinks != 0;
  p.query_offset = d.query_offset;
  p.bias = d.bias;
  p.tables_per_head = d.tables_per_head != 0;
  set_scales(p, d.scale, d.bias_uses_scaled_q != 0);
  p.softcap = d.softcap > 0 ? softcap_factors(p.softmax_scale, d.softcap) : SoftcapFactors{0, 0};
  p.max_distance = d.max_distance;
  p.map_height = d.map_height;
  p.map_width = d.map_width;
  p.kv_map_height = d.kv_map_height == 0 ? d.map_height : d.kv_map_height;
  p.kv_map_width = d.kv_map_width == 0 ? d.map_width : d.kv_map_width;
  p.query_minus_key = d.relative_order == POSENC_RELATIVE_QUERY_MINUS_KEY;
  p.relative_values = d.relative_values != 0;
  p.relative_query_bias = d.relative_query_bias != 0;
  p.bias_gate = d.bias_gate != 0;
  p.class_token = d.class_token != 0;
  p.num_buckets = d.num_buckets;
  p.bidirectional = d.bidirectional != 0;
  p.kv_lengths = t ? t->kv_lengths : nullptr;
  p.q_lengths = t ? t->q_lengths : nullptr;
  p.query_offsets = t ? t->query_offsets : nullptr;
  p.index_type = d.index_type;
  p.max_query_offset = t && t->query_offsets ? max_query_offset : d.query_offset;
  // Without a mask its other fields are not read (posenc/attention.h): they
  // may hold anything, an enum value outside posenc_dtype included.
  p.mask = d.mask_batch > 0 ? AttentionMask{d.mask_batch, d.mask_heads, d.mask_q_len, d.mask_dtype}
                            : AttentionMask{0, 1, 1, POSENC_F32};
  return p;
}

}  // namespace posenc::ops
