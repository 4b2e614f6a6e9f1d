#include "ops/absolute/frequencies.hpp"

#include <cmath>

namespace posenc::ops {

std::vector<double> inverse_frequencies(int64_t dim, double base) {
  std::vector<double> freqs(size_t((dim + 1) / 2));
  for (size_t i = 0; i < freqs.size(); ++i) {
    freqs[i] = std::pow(base, -double(2 * i) / double(dim));
  }
  return freqs;
}

}  // namespace posenc::ops
