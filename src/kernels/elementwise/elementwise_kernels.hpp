// Elementwise kernels shared by the op families.
#pragma once

#include <cstdint>

namespace posenc {

struct ElementwiseKernels {
  // out[j] = x[j] + y[j] for j < n; out may equal x or y.
  void (*add_f32)(const float* x, const float* y, float* out, int64_t n);
  // out[j] = bf16(x[j]), round-to-nearest-even, NaN kept quiet.
  void (*f32_to_bf16)(const float* x, uint16_t* out, int64_t n);
  // out[j] = float(x[j]) (exact: the bf16 bits as the upper half).
  void (*bf16_to_f32)(const uint16_t* x, float* out, int64_t n);
};

}  // namespace posenc
