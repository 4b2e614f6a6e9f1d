// bf16 operands widened to fp32 for the attention's GEMMs where bf16 GEMMs
// would not outpace fp32 ones (attention_gemm_dtype,
// AttentionProblem::gemms_widen_bf16): a task
// widens what it multiplies (its rows of q, a key block's keys and values,
// the table rows of its bias) into its scratch as it reads them, so that
// the workspace stays per thread and per block. The GEMMs then run at
// oneDNN's fp32 rate on exactly the bf16 values.
#pragma once

#include <cstdint>

#include "kernels/elementwise/elementwise_kernels.hpp"

namespace posenc::ops {

// to[r, :] = from[r * ld, r * ld + columns) as floats, for r < rows (from of
// bf16, ld elements apart; to dense, row stride columns).
inline void widen_rows(const ElementwiseKernels& kernels, const void* from, int64_t ld,
                       int64_t rows, int64_t columns, float* to) {
  const auto* row = static_cast<const uint16_t*>(from);
  for (int64_t r = 0; r < rows; ++r) kernels.bf16_to_f32(row + r * ld, to + r * columns, columns);
}

}  // namespace posenc::ops
