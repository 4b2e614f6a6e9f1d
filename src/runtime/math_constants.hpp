// Numerical constants shared by ops and kernels.
#pragma once

namespace posenc {

inline constexpr double kTwoPi = 6.283185307179586476925286766559;

// Softmax probabilities, and the factors that rescale earlier blocks' or
// splits' partial results, below 2^-64 are 0. Next to the row maximum's 1
// they are 2^-40 below the rounding of the row's sum; kept, they and their
// products with values of ordinary size come near FLT_MIN, where oneDNN's
// GEMMs would compute subnormals, a microcode assist each on Intel cores:
// ALiBi's far keys made causal attention 2.2x slower than without the bias
// on a 2-core Xeon.
inline constexpr int kMinProbabilityExponent = -64;
inline constexpr float kMinProbability = 0x1p-64f;
// ln(kMinProbability): the arguments of exp that are flushed lie below it.
inline constexpr float kMinProbabilityLog = -44.3614196f;

}  // namespace posenc
