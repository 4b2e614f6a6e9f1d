// The interpolation kernels of torch.nn.functional.interpolate, for the
// reference resizes.
#pragma once

#include <cmath>

namespace posenc::reference {

// Keys' cubic convolution kernel with parameter A at distance x (torch's
// bicubic: A = -0.75; antialiased, as Pillow's: A = -0.5).
inline double keys_kernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
  if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
  return 0;
}

}  // namespace posenc::reference
