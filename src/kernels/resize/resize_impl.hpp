// Table-resize kernels, templated on the xsimd arch: plain loops over a
// fixed number of columns, which the compiler vectorizes with each path's
// flags, the sums held in registers across the rows.
#pragma once

#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "kernels/resize/resize_kernels.hpp"

namespace posenc::kernels {

// Columns [i0, i0 + Width) of the weighted sum.
template <class Arch, int64_t Width, class In, class Out>
void weigh_columns(const In* base, int64_t stride, const int64_t* indices,
                   const double* weights, int64_t count, int64_t i0, Out* out) {
  double sums[Width] = {};
  for (int64_t k = 0; k < count; ++k) {
    const double w = weights[k];
    const In* row = base + indices[k] * stride + i0;
    for (int64_t i = 0; i < Width; ++i) sums[i] += w * double(row[i]);
  }
  for (int64_t i = 0; i < Width; ++i) out[i0 + i] = Out(sums[i]);
}

template <class Arch, class In, class Out>
void weigh_rows(const In* base, int64_t stride, const int64_t* indices, const double* weights,
                int64_t count, int64_t n, Out* out) {
  constexpr int64_t kWidth = 4 * int64_t(xsimd::batch<double, Arch>::size);  // 4 registers
  int64_t i0 = 0;
  for (; i0 + kWidth <= n; i0 += kWidth) {
    weigh_columns<Arch, kWidth>(base, stride, indices, weights, count, i0, out);
  }
  for (; i0 < n; ++i0) weigh_columns<Arch, 1>(base, stride, indices, weights, count, i0, out);
}

template <class Arch>
constexpr ResizeKernels make_resize_kernels() {
  return ResizeKernels{&weigh_rows<Arch, float, double>, &weigh_rows<Arch, double, float>};
}

}  // namespace posenc::kernels
