// Kernels of the absolute-encoding family.
#pragma once

#include <cstdint>

#include "posenc/absolute.h"

namespace posenc {

struct AbsoluteKernels {
  // One sinusoid row of `dim` columns for `position`: freqs holds the
  // ceil(dim/2) frequencies w_i; layout as in posenc/absolute.h.
  void (*sinusoid_row)(int64_t position, const double* freqs, int64_t dim,
                       posenc_sincos_layout layout, float* out);
};

}  // namespace posenc
