// Kernels of the table resizes (ops/resize): the weighted sums of rows that
// each of a grid's two interpolation passes is made of.
#pragma once

#include <cstdint>

namespace posenc {

struct ResizeKernels {
  // out[i] = sum over k < count of weights[k] * base[indices[k] * stride + i],
  // for i < n, summed in double (input rows along the grid's height, into a
  // line). The indices are consecutive, or 2 or 4 of them (ops/resize's
  // taps: a border's clamped rows without antialias).
  void (*weigh_float_rows)(const float* base, int64_t stride, const int64_t* indices,
                           const double* weights, int64_t count, int64_t n, double* out);
  // The same over rows of doubles, each sum rounded once to float (a line's
  // cells along the grid's width, into an output cell).
  void (*weigh_double_rows)(const double* base, int64_t stride, const int64_t* indices,
                            const double* weights, int64_t count, int64_t n, float* out);
};

}  // namespace posenc
