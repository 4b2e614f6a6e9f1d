// The bf16 conversions of every ISA path, bit for bit against the scalar
// definition (posenc_f32_to_bf16 / posenc_bf16_to_f32): the f32_to_bf16 kernel
// on special values at every length class, and the RoPE bf16 kernels on every
// finite nonzero bf16 value through a rotation whose fp32 result is exact.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "runtime/kernel_registry.hpp"

namespace posenc::test {
namespace {

constexpr uint16_t kGuard = 0xA5A5;

// Floats whose rounding is worth checking, as bit patterns: NaNs (quiet and
// signalling, with payloads only in the dropped half), infinities, zeros,
// denormals, ties to even either way, and the largest finite floats.
const uint32_t kSpecials[] = {
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FA00000u, 0x7F80FFFFu,
    0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,
    0x00000001u, 0x80000001u, 0x00007FFFu, 0x00008000u, 0x00018000u, 0x007FFFFFu,
    0x807FFFFFu, 0x00800000u, 0x3F808000u, 0x3F818000u, 0xBF808000u, 0xBF818000u,
    0x3F807FFFu, 0x3F808001u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F7FFFu, 0x7F7F8000u,
    0x7F7E8000u, 0x3F800000u,
};

// The specials, then every upper half with the lower halves that decide the
// rounding (zero, below, at and above the tie, all ones).
std::vector<float> rounding_inputs() {
  std::vector<float> values;
  for (uint32_t bits : kSpecials) values.push_back(float_from_bits(bits));
  for (uint32_t high = 0; high < 0x10000u; ++high) {
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      values.push_back(float_from_bits(high << 16 | low));
    }
  }
  return values;
}

class Bf16Kernels : public IsaTest {};

// Lengths with every tail of 4, 8 and 16 lanes (1 to 15), and longer rows.
constexpr size_t kLengths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                               13, 14, 15, 16, 17, 31, 32, 33, 61, 64, 97};

// x[first, first + n) through the kernel, into a buffer with a guard value
// behind the n outputs.
void expect_f32_to_bf16_matches_scalar(const KernelTable& kernels, const std::vector<float>& x,
                                       size_t first, size_t n) {
  std::vector<uint16_t> out(n + 1, kGuard);
  kernels.elementwise.f32_to_bf16(x.data() + first, out.data(), int64_t(n));
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[first + i], sizeof bits);
    ASSERT_EQ(out[i], posenc_f32_to_bf16(x[first + i]))
        << "n " << n << ", input 0x" << std::hex << bits;
  }
  EXPECT_EQ(out[n], kGuard) << "written past n = " << n;
}

TEST_P(Bf16Kernels, F32ToBf16RoundsAsScalar) {
  const std::vector<float> x = rounding_inputs();
  for (size_t n : kLengths) {
    for (size_t first : {0, 1, 3}) expect_f32_to_bf16_matches_scalar(kernels(), x, first, n);
  }
  expect_f32_to_bf16_matches_scalar(kernels(), x, 0, x.size());
  expect_f32_to_bf16_matches_scalar(kernels(), x, 1, x.size() - 1);
}

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Every bf16 pattern (NaNs, infinities, zeros and denormals among them)
// widened bit for bit as posenc_bf16_to_f32, from several offsets and at
// every length class, nothing written past n.
TEST_P(Bf16Kernels, Bf16ToF32WidensEveryPatternExactly) {
  std::vector<uint16_t> x(0x10000);
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) x[bits] = uint16_t(bits);
  auto expect_widened = [&](size_t first, size_t n) {
    const float guard = float_from_bits(0x7F8A5A5Au);
    std::vector<float> out(n + 1, guard);
    kernels().elementwise.bf16_to_f32(x.data() + first, out.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits_of(out[i]), bits_of(posenc_bf16_to_f32(x[first + i])))
          << "n " << n << ", input 0x" << std::hex << x[first + i];
    }
    EXPECT_EQ(bits_of(out[n]), bits_of(guard)) << "written past n = " << n;
  };
  for (size_t n : kLengths) {
    for (size_t first : {0, 1, 3, 0x7F7F, 0xFF70}) expect_widened(first, n);
  }
  expect_widened(0, x.size());
  expect_widened(1, x.size() - 1);
}

// Multipliers of at most 16 significant bits: times a bf16 value (8 bits) the
// fp32 product is exact, and it often lies at or near a bf16 tie. Each is at
// least 1, so no nonzero product becomes zero.
const float kCosines[] = {1.0f, 1.00390625f, 1.01171875f, 1.5f, 1.00390625f + 1.0f / 65536,
                          2.9921875f, 1.0f + 1.0f / 512};

// Every finite nonzero bf16 value, once.
std::vector<uint16_t> finite_nonzero_bf16() {
  std::vector<uint16_t> values;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    if ((bits & 0x7FFFu) != 0 && (bits & 0x7F80u) != 0x7F80u) values.push_back(uint16_t(bits));
  }
  return values;
}

// Rotation by the row's cosines and zero sines: each output is x * cos, exact
// in fp32, so the kernel must give posenc_f32_to_bf16 of it for every value
// (loads and stores of every bf16 pattern, with ties and overflow to inf).
void expect_rope_bf16_matches_scalar(const KernelTable& kernels, posenc_rope_pairing pairing,
                                     int64_t rotary_dim, int64_t dim, bool in_place) {
  const std::vector<uint16_t> values = finite_nonzero_bf16();
  const int64_t count = (int64_t(values.size()) + rotary_dim - 1) / rotary_dim;
  std::vector<uint16_t> x(size_t(count * dim), 0x3F80);  // the tail of the last row: 1.0
  for (size_t v = 0; v < values.size(); ++v) {
    x[size_t(int64_t(v) / rotary_dim * dim + int64_t(v) % rotary_dim)] = values[v];
  }
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t i = rotary_dim; i < dim; ++i) x[size_t(r * dim + i)] = uint16_t(r * dim + i);
  }
  const bool interleaved = pairing == POSENC_ROPE_INTERLEAVED;
  const int64_t cosines = interleaved ? rotary_dim : rotary_dim / 2;
  std::vector<float> row(size_t(2 * cosines), 0.0f);  // [cos | zero sin]
  for (int64_t j = 0; j < cosines; ++j) row[size_t(j)] = kCosines[j % std::size(kCosines)];

  // Out of place, one guard value past the end.
  std::vector<uint16_t> out = in_place ? x : std::vector<uint16_t>(x.size() + 1, kGuard);
  const auto rotate = interleaved ? kernels.rope.interleaved_bf16 : kernels.rope.half_split_bf16;
  rotate(in_place ? out.data() : x.data(), out.data(), count, dim, row.data(), 0, rotary_dim, dim);
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t i = 0; i < dim; ++i) {
      const size_t at = size_t(r * dim + i);
      uint16_t want = x[at];
      if (i < rotary_dim) {
        const float c = row[size_t(interleaved ? i : i % cosines)];
        want = posenc_f32_to_bf16(posenc_bf16_to_f32(x[at]) * c);
      }
      ASSERT_EQ(out[at], want) << "rotary_dim " << rotary_dim << ", row " << r << ", value "
                               << i << ", input 0x" << std::hex << x[at];
    }
  }
  if (!in_place) {
    EXPECT_EQ(out.back(), kGuard) << "written past the end";
  }
}

TEST_P(Bf16Kernels, RopeRoundsAsScalar) {
  for (posenc_rope_pairing pairing : {POSENC_ROPE_INTERLEAVED, POSENC_ROPE_HALF_SPLIT}) {
    for (int64_t rotary_dim : {2, 6, 14, 30, 62, 128}) {
      for (bool in_place : {false, true}) {
        expect_rope_bf16_matches_scalar(kernels(), pairing, rotary_dim, rotary_dim + 6,
                                        in_place);
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(Bf16Kernels);

}  // namespace
}  // namespace posenc::test
