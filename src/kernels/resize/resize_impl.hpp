// Table-resize kernels, templated on the xsimd arch: plain loops over a
// fixed number of columns, which the compiler vectorizes with each path's
// flags, the sums held in registers across the rows.
#pragma once

#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "kernels/resize/resize_kernels.hpp"

namespace posenc::kernels {

// Columns [i0, i0 + Width) of the weighted sum of the rows row_of(k), k < count.
template <class Arch, int64_t Width, class RowOf, class Out>
void weigh_columns(const RowOf& row_of, const double* weights, int64_t count, int64_t i0,
                   Out* out) {
  double sums[Width] = {};
  for (int64_t k = 0; k < count; ++k) {
    const double w = weights[k];
    const auto* row = row_of(k) + i0;
    for (int64_t i = 0; i < Width; ++i) sums[i] += w * double(row[i]);
  }
  for (int64_t i = 0; i < Width; ++i) out[i0 + i] = Out(sums[i]);
}

template <class Arch, class RowOf, class Out>
void weigh_all_columns(const RowOf& row_of, const double* weights, int64_t count, int64_t n,
                       Out* out) {
  constexpr int64_t kWidth = 4 * int64_t(xsimd::batch<double, Arch>::size);  // 4 registers
  int64_t i0 = 0;
  for (; i0 + kWidth <= n; i0 += kWidth) {
    weigh_columns<Arch, kWidth>(row_of, weights, count, i0, out);
  }
  for (; i0 < n; ++i0) weigh_columns<Arch, 1>(row_of, weights, count, i0, out);
}

// A border's taps without antialias (2 or 4, some reading one clamped row
// twice), their count a constant so that GCC unrolls them.
template <class Arch, int64_t Count, class In, class Out>
void weigh_clamped_rows(const In* base, int64_t stride, const int64_t* indices,
                        const double* weights, int64_t n, Out* out) {
  const In* rows[Count];
  for (int64_t k = 0; k < Count; ++k) rows[k] = base + indices[k] * stride;
  weigh_all_columns<Arch>([&](int64_t k) { return rows[k]; }, weights, Count, n, out);
}

template <class Arch, class In, class Out>
void weigh_rows(const In* base, int64_t stride, const int64_t* indices, const double* weights,
                int64_t count, int64_t n, Out* out) {
  // Consecutive rows as a first row and a stride, other taps in counts known
  // at compile time: over rows looked up at run time GCC moved the sums to
  // memory (1.7x the time).
  bool consecutive = true;
  for (int64_t k = 1; k < count; ++k) consecutive &= indices[k] == indices[0] + k;
  if (consecutive) {
    const In* first = base + indices[0] * stride;
    weigh_all_columns<Arch>([&](int64_t k) { return first + k * stride; }, weights, count, n,
                            out);
  } else if (count == 4) {
    weigh_clamped_rows<Arch, 4>(base, stride, indices, weights, n, out);
  } else {
    weigh_clamped_rows<Arch, 2>(base, stride, indices, weights, n, out);
  }
}

template <class Arch>
constexpr ResizeKernels make_resize_kernels() {
  return ResizeKernels{&weigh_rows<Arch, float, double>, &weigh_rows<Arch, double, float>};
}

}  // namespace posenc::kernels
