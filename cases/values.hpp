// Inputs of the cases and comparing their outputs with the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace posenc::cases {

// `count` values in [-1, 1) from `seed`: the same on every run and machine,
// cheap enough for benchmark sizes.
std::vector<float> seeded_floats(size_t count, uint32_t seed);

// Read-only inputs: seeded_floats(count, seed) (as they are, rounded to
// bf16, or as bf16 bits), the same memory for every problem that asks while
// one of them holds it, so that problems of one case made at once (the
// concurrency test's threads) read shared inputs, as serving threads do.
template <class T>
using Shared = std::shared_ptr<const std::vector<T>>;
Shared<float> shared_floats(size_t count, uint32_t seed);
Shared<float> shared_bf16_values(size_t count, uint32_t seed);
Shared<uint16_t> shared_bf16_bits(size_t count, uint32_t seed);

// bf16 bits of each value (round to nearest even), and the values of bf16 bits.
std::vector<uint16_t> to_bf16(const std::vector<float>& values);
std::vector<float> from_bf16(const std::vector<uint16_t>& bits);

// The values rounded to bf16, as fp32: what a bf16 op reads.
std::vector<float> rounded_to_bf16(const std::vector<float>& values);

// Largest |got[i] - want[i]|; infinite where an infinity or NaN of `want`
// is not matched exactly, NaN where `got` is NaN and `want` is not.
double max_error(const std::vector<float>& got, const std::vector<double>& want);

}  // namespace posenc::cases
