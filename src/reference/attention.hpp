// Reference loops for posenc/attention.h, in double, straight from the
// definitions in that header (no blocking, no online softmax, no windows).
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/attention.h"

namespace posenc::reference {

// fp32 copies of the inputs (bf16 tests pass their values widened); NULL
// where the desc uses no such tensor.
struct AttentionInputs {
  const float* q;
  const float* k;
  const float* v;
  const float* table;
  const float* table_h;
  const float* table_w;
  const float* value_table;
  const float* mask = nullptr;  // [mask_batch, mask_heads, mask_q_len, kv_len]
  // The per-sequence options of posenc/attention.h as int64 values, NULL
  // when unused.
  const int64_t* kv_lengths = nullptr;
  const int64_t* q_lengths = nullptr;
  const int64_t* query_offsets = nullptr;
  const float* sinks = nullptr;  // [heads] with sinks
  const float* relative_query_bias = nullptr;  // [heads, head_dim] with relative_query_bias
  const float* key_table = nullptr;  // DISENTANGLED: the table k multiplies
  const float* bias_gate = nullptr;  // [batch, heads, q_len] with bias_gate
};

// DISENTANGLED's table row of query minus key distance r (posenc/attention.h).
int64_t disentangled_row(const posenc_attention_desc& desc, int64_t r);

// Element (b, h, t, c) of a tensor of `heads` heads and `tokens` tokens of
// row_size elements (0: head_dim; v and out have value_head_dim_of(desc)) in
// the desc's layout (STRIDED: `strides`), and the elements such a tensor
// spans (its last element's index + 1).
int64_t index_of(const posenc_attention_desc& desc, const posenc_token_strides& strides,
                 int64_t heads, int64_t tokens, int64_t b, int64_t h, int64_t t, int64_t c,
                 int64_t row_size = 0);
int64_t extent_of(const posenc_attention_desc& desc, const posenc_token_strides& strides,
                  int64_t heads, int64_t tokens, int64_t row_size = 0);

// The heads of k and v: kv_heads, or heads for 0.
int64_t kv_heads_of(const posenc_attention_desc& desc);

// The head size of v and out: value_head_dim, or head_dim for 0.
int64_t value_head_dim_of(const posenc_attention_desc& desc);

// The keys [first, end) the query at `position` sees among kv_length: all,
// or with causal j <= position; with a sliding window W, j > position - W,
// and without causal j < position + W too.
struct VisibleKeys {
  int64_t first, end;
};
VisibleKeys visible_keys(const posenc_attention_desc& desc, int64_t position, int64_t kv_length);

// q, k, v read in the desc's layout (STRIDED: by its strides; k and v with
// kv_heads heads). The output in the desc's layout, or dense
// [batch, heads, q_len, value_head_dim] for STRIDED.
std::vector<double> attention(const posenc_attention_desc& desc, const AttentionInputs& in);

// The attention of |v| and |value_table| (q, k and the rest as they are):
// per output, m = sum_j p_j (|v_j| + |RV_j|), the scale by which rounding the
// probabilities can move it (the bf16 attention's error bound).
std::vector<double> attention_value_magnitudes(const posenc_attention_desc& desc,
                                               const AttentionInputs& in);

// out [batch, heads*value_head_dim, height / stride, width / stride] (value
// head size 0: head_dim); w_qkv [heads*(2*head_dim + value_head_dim),
// channels], q, k and v channels in timm's split; qkv_bias may be NULL.
std::vector<double> bottleneck_mhsa(const posenc_bottleneck_desc& desc, const float* fmap,
                                    const float* w_qkv, const float* qkv_bias,
                                    const float* rel_h, const float* rel_w);

}  // namespace posenc::reference
