// The unfused way of relative-position attention, as PyTorch code writes
// it, here in C++ on the same oneDNN: per (batch, head), materialized
// scores q k^T [N, N], position logits q R^T, the pad / flatten / pad /
// reshape / slice skew as copies, the bias added, a softmax per row, then
// the GEMM with v. The bias kinds without q (TABLE_2D, TABLE_1D, T5, ALIBI)
// as models run them: the dense bias [heads, q_len, kv_len] materialized
// once per call (posenc_position_bias: Swin's gather of its table, T5's
// compute_bias), added to each head's scores (each row times its gate
// with bias_gate: WavLM's gated bias) with the mask, causal keys masked.
// DeBERTa's disentangled bias as transformers' DebertaV2 runs it: the
// table rows of each (query, key) pair once per call, then per head
// the logits of q and of k against every table row (two GEMMs) gathered
// into the scores. Only for fp32 BHTD inputs; a baseline for benchmarks.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/attention.h"
#include "runtime/context.hpp"

namespace posenc::cases {

class UnfusedAttention {
 public:
  // desc: BHTD, F32, q_len == kv_len, bias RELATIVE_1D (unclipped) or
  // RELATIVE_2D (shared tables, no mask, not causal), DISENTANGLED (per-head
  // tables, no mask, not causal), or a kind without q (query_offset 0, a
  // mask and causal allowed).
  static bool applies(const posenc_attention_desc& desc);
  explicit UnfusedAttention(const posenc_attention_desc& desc);

  void run(posenc_context* context, const posenc_attention_tensors& tensors);

 private:
  void relative_1d(const ExecContext& ctx, const float* q, const float* table);
  void relative_2d(const ExecContext& ctx, const float* q, const float* table_h,
                   const float* table_w);
  void add_position_bias(const ExecContext& ctx, int64_t b, int64_t h,
                         const posenc_attention_tensors& tensors);
  void disentangled(const ExecContext& ctx, int64_t h, const float* q, const float* k,
                    const posenc_attention_tensors& tensors);

  posenc_attention_desc d_;
  std::vector<float> scores_, logits_, padded_, flat_padded_, skewed_, skewed_h_, q_t_;
  std::vector<float> dense_bias_;  // [heads, n, n] for the kinds without q
  std::vector<float> key_logits_;  // DISENTANGLED: k's logits [n, 2S]
  std::vector<int32_t> pair_rows_;  // DISENTANGLED: [n, n] table rows
};

}  // namespace posenc::cases
