// The layout half of posenc_attention's validation: kv_heads, the strides of
// POSENC_LAYOUT_STRIDED (or their absence under BHTD and BTHD), and the
// elements each of q, k, v and out spans, for the aliasing checks. Each
// check throws posenc::Error naming the field (api/validate.hpp).
#pragma once

#include <cstdint>

#include "posenc/attention.h"

namespace posenc {

// Elements from each tensor's pointer to one past the last it holds (for
// STRIDED: the largest row offset plus the row: head_dim for q and k,
// value_head_dim for v and out; 0 for a tensor without rows).
struct AttentionExtents {
  int64_t q, k, v, out;
};

// Checks desc->kv_heads, desc->layout and the four strides; batch, heads,
// lengths, head_dim, value_head_dim and the dtypes must have been checked
// already. Errors: INVALID_ARGUMENT for a bad kv_heads, a negative stride,
// an input token stride below its row (head_dim; v: value_head_dim),
// strides under BHTD/BTHD; OVERFLOW for a tensor whose bytes overflow
// int64; ALIASING for out rows that overlap each other.
AttentionExtents validate_attention_layout(const posenc_attention_desc& desc);

}  // namespace posenc
