// Kernels of the dense position biases without q (posenc/bias.h) that
// compute their values rather than look them up (the tables' and T5's rows
// are gathers: RelativeKernels::gather_row).
#pragma once

#include <cstdint>

namespace posenc {

struct PositionBiasKernels {
  // ALiBi's row: out[c] = slope * float(d0 + c) for c < count, or
  // slope * float(-|d0 + c|) bidirectional, one fp32 rounding of the
  // product.
  void (*alibi_row)(float slope, bool bidirectional, int64_t d0, int64_t count, float* out);
  // The same with non-temporal stores, as RelativeKernels::gather_row_stream
  // (fenced by the caller).
  void (*alibi_row_stream)(float slope, bool bidirectional, int64_t d0, int64_t count,
                           float* out);
};

}  // namespace posenc
