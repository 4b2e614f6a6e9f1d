#include "ops/absolute/frequencies.hpp"

#include <cmath>

namespace posenc::ops {

void inverse_frequencies(int64_t dim, double base, double* freqs) {
  for (int64_t i = 0; i < (dim + 1) / 2; ++i) {
    freqs[i] = std::pow(base, -double(2 * i) / double(dim));
  }
}

std::vector<double> inverse_frequencies(int64_t dim, double base) {
  std::vector<double> freqs(size_t((dim + 1) / 2));
  inverse_frequencies(dim, base, freqs.data());
  return freqs;
}

}  // namespace posenc::ops
