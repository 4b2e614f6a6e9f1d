// Comparing results with the reference loops, and making test inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cases/values.hpp"
#include "posenc/core.h"

namespace posenc::test {

// |got[i] - want[i]| <= atol + rtol * |want[i]| for every i; NaN must match
// NaN and infinities must match exactly. On failure the message gives the
// first bad index, the count of bad values and the largest error.
::testing::AssertionResult all_close(const float* got, const std::vector<double>& want,
                                     double atol, double rtol);
::testing::AssertionResult all_close_bf16(const uint16_t* got, const std::vector<double>& want,
                                          double atol, double rtol);

// bf16 bits of each value (round to nearest even), and the values of bf16 bits.
using cases::from_bf16;
using cases::to_bf16;

// The float whose bits are `bits`.
float float_from_bits(uint32_t bits);

// The call returned `want` and the thread's last error names `argument`.
::testing::AssertionResult fails_with(posenc_status got, posenc_status want,
                                      const char* argument);

// Uniform values in [low, high), reproducible from the seed.
std::vector<float> random_floats(size_t count, uint32_t seed, float low = -1.0f,
                                 float high = 1.0f);

// A buffer with guard values around its payload, to prove that a failed call
// wrote nothing, and that a successful one wrote nothing outside.
class GuardedFloats {
 public:
  explicit GuardedFloats(size_t count, float fill = 12345.0f);
  float* data() { return storage_.data() + kGuard; }
  bool guards_intact() const;
  bool payload_untouched() const;  // still all `fill`

 private:
  static constexpr size_t kGuard = 64;
  float fill_;
  std::vector<float> storage_;
};

}  // namespace posenc::test
