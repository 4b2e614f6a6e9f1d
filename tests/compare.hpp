// Comparing results with the reference loops, and making test inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cases/values.hpp"
#include "posenc/core.h"

namespace posenc::test {

// The bf16 bottleneck block's atol and rtol against the double reference
// on the same bf16 inputs, which keeps the projection's q, k and v in double
// where the block rounds them to bf16.
inline constexpr double kBf16Tol = 1e-2;

// The bf16 attention's bound: |got - want| <= kBf16AttentionTol (m + |want|),
// m the reference on |v| (cases/values.hpp says why).
inline constexpr double kBf16AttentionTol = cases::kBf16AttentionTolerance;
::testing::AssertionResult bf16_attention_close(const float* got, const std::vector<double>& want,
                                                const std::vector<double>& magnitudes);

// |got[i] - want[i]| <= atol + rtol * |want[i]| for every i; NaN must match
// NaN and infinities must match exactly. On failure the message gives the
// first bad index, the count of bad values and the largest error.
::testing::AssertionResult all_close(const float* got, const std::vector<double>& want,
                                     double atol, double rtol);
::testing::AssertionResult all_close_bf16(const uint16_t* got, const std::vector<double>& want,
                                          double atol, double rtol);

// An attention's output against its double reference: bf16 (inputs or
// output) as bf16_attention_close, on the magnitudes() it asks for then;
// fp32 within atol + rtol |want|.
template <class Magnitudes>
::testing::AssertionResult attention_close(const std::vector<float>& got,
                                           const std::vector<double>& want, bool bf16,
                                           const Magnitudes& magnitudes, double atol, double rtol) {
  if (bf16) return bf16_attention_close(got.data(), want, magnitudes());
  return all_close(got.data(), want, atol, rtol);
}

// bf16 bits of each value (round to nearest even), and the values of bf16 bits.
using cases::from_bf16;
using cases::to_bf16;

// Whether a and b hold the same floats, bit for bit (NaNs too).
inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The float whose bits are `bits`.
float float_from_bits(uint32_t bits);

// p moved by `bytes` bytes, for misaligned tensors (posenc refuses them
// before reading).
template <class T>
T* offset_bytes(T* p, size_t bytes) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + bytes);
}

// Stores any int in an enum field, as a C caller may: a value outside the
// enum's range (a negative one) cannot be converted to it in C++.
template <class Enum>
void store_enum(Enum& field, int32_t value) {
  static_assert(sizeof(Enum) == sizeof(value));
  std::memcpy(&field, &value, sizeof value);
}

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
  // Whether the payload's bytes from `byte` on still hold `fill`'s (a bf16
  // output's unused second half).
  bool payload_untouched_from_byte(size_t byte) const;

 private:
  static constexpr size_t kGuard = 64;
  float fill_;
  std::vector<float> storage_;
};

// The first `count` outputs of a buffer written as out_dtype, as floats
// (bf16 outputs fill the first half of the buffer's bytes; a write to the
// second half fails the test).
std::vector<float> as_floats(GuardedFloats& out, size_t count, posenc_dtype out_dtype);

}  // namespace posenc::test
