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

// Largest |got[i] - want[i]| / units[i] (units empty: 1); infinite where an
// infinity or NaN of `want` is not matched exactly, NaN where `got` is NaN
// and `want` is not.
double max_error(const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& units = {});

// The bf16 attention's bound against the double reference on the same bf16
// inputs, in units of m + |want|, m = sum_j p_j |v_j| (the reference on
// |v|): the probabilities rounded to bf16 (2^-8 relative each) move an
// output by up to 2^-8 m, an error e in the logits (bf16 operands of the
// bias GEMMs) by up to e (m + |want|), the output's rounding by 2^-8 |want|.
// The tests' largest error, on AMX, is 0.39 of it, the cases' with
// AVX512-BF16's GEMMs 0.26, and an output scaled by 0.98 fails it. (An
// absolute 1e-2 passed an all-zero output of 70000 keys, whose |want| is
// near m / sqrt(keys).)
inline constexpr double kBf16AttentionTolerance = 0x1p-7;

// The bound's units, m[i] + |want[i]|, from the reference on |v| and the
// reference; all NaN where their sizes differ, so that no inexact output passes.
std::vector<double> bf16_attention_units(const std::vector<double>& magnitudes,
                                         const std::vector<double>& want);

}  // namespace posenc::cases
