// The unfused way of relative-position attention, as PyTorch code writes
// it, here in C++ on the same oneDNN: per (batch, head), materialized
// scores q k^T [N, N], position logits q R^T, the pad / flatten / pad /
// reshape / slice skew as copies, the bias added, a softmax per row, then
// the GEMM with v. Only for fp32 BHTD inputs; a baseline for benchmarks.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/attention.h"
#include "runtime/context.hpp"

namespace posenc::cases {

class UnfusedAttention {
 public:
  // desc: BHTD, F32, bias RELATIVE_1D (unclipped, q_len == kv_len) or
  // RELATIVE_2D, shared tables, no mask.
  explicit UnfusedAttention(const posenc_attention_desc& desc);

  void run(posenc_context* context, const posenc_attention_tensors& tensors);

 private:
  void relative_1d(const ExecContext& ctx, const float* q, const float* table);
  void relative_2d(const ExecContext& ctx, const float* q, const float* table_h,
                   const float* table_w);

  posenc_attention_desc d_;
  std::vector<float> scores_, logits_, padded_, flat_padded_, skewed_, skewed_h_, q_t_;
};

}  // namespace posenc::cases
