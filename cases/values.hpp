// Inputs of the cases and comparing their outputs with the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace posenc::cases {

// `count` values in [-1, 1) from `seed`: the same on every run and machine,
// cheap enough for benchmark sizes.
std::vector<float> seeded_floats(size_t count, uint32_t seed);

// bf16 bits of each value (round to nearest even), and the values of bf16 bits.
std::vector<uint16_t> to_bf16(const std::vector<float>& values);
std::vector<float> from_bf16(const std::vector<uint16_t>& bits);

// The values rounded to bf16, as fp32: what a bf16 op reads.
std::vector<float> rounded_to_bf16(const std::vector<float>& values);

// Largest |got[i] - want[i]|; infinite where an infinity or NaN of `want`
// is not matched exactly, NaN where `got` is NaN and `want` is not.
double max_error(const std::vector<float>& got, const std::vector<double>& want);

}  // namespace posenc::cases
