// Reference loops for posenc/attention.h, in double, straight from the
// definitions in that header (no blocking, no online softmax, no windows).
#pragma once

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
};

// The output in the desc's layout.
std::vector<double> attention(const posenc_attention_desc& desc, const AttentionInputs& in);

// out [batch, heads*head_dim, height / stride, width / stride]; qkv_bias may
// be NULL.
std::vector<double> bottleneck_mhsa(const posenc_bottleneck_desc& desc, const float* fmap,
                                    const float* w_qkv, const float* qkv_bias,
                                    const float* rel_h, const float* rel_w);

}  // namespace posenc::reference
