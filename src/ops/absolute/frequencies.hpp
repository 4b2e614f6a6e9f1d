// The inverse frequencies shared by the sinusoidal encodings and RoPE.
#pragma once

#include <cstdint>
#include <vector>

namespace posenc::ops {

// w_i = base^(-2i/dim) for i < ceil(dim/2), in double.
void inverse_frequencies(int64_t dim, double base, double* freqs);
std::vector<double> inverse_frequencies(int64_t dim, double base);

}  // namespace posenc::ops
