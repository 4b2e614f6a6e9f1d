// Kernels of the RoPE family: rotating head vectors by cos/sin rows.
#pragma once

#include <cstdint>

namespace posenc {

// Rotates `count` head vectors: vector r is x + r*stride (dim values), written
// to out + r*stride, with the cos/sin row rows + r*row_stride (row_stride 0:
// one row for all). Rows are laid out as ops::RopeAngles::row_floats says for
// the kernel's pairing. Values [rotary_dim, dim) are copied unless out == x.
// out == x is allowed; bf16 values are uint16_t bit patterns.
template <class T>
using RopeRotateFn = void (*)(const T* x, T* out, int64_t count, int64_t stride,
                              const float* rows, int64_t row_stride, int64_t rotary_dim,
                              int64_t dim);

struct RopeKernels {
  RopeRotateFn<float> interleaved_f32;
  RopeRotateFn<float> half_split_f32;
  RopeRotateFn<uint16_t> interleaved_bf16;
  RopeRotateFn<uint16_t> half_split_bf16;
};

}  // namespace posenc
