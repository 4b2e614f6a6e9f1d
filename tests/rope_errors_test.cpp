// Bad input to the RoPE entry points: the documented status, a message naming
// the argument, and nothing written.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "c_enum_calls.h"
#include "compare.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

constexpr auto kBthd = POSENC_ROPE_BTHD;
constexpr int64_t kBatch = 1, kTokens = 4, kHeads = 2, kDim = 8;

class RopeErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(posenc_rope_config_init(&config_, kDim), POSENC_OK);
    ASSERT_EQ(posenc_rope_cache_create(nullptr, &config_, 10, &cache_), POSENC_OK);
  }
  void TearDown() override { posenc_rope_cache_destroy(cache_); }

  // One tensor x -> out on the fly with config, at `positions`.
  posenc_status rope(const posenc_rope_config& config,
                     const posenc_rope_positions* positions = nullptr) {
    return posenc_rope(nullptr, &config, nullptr, positions, kBthd, POSENC_F32, kBatch, kTokens,
                       kHeads, kDim, x_.data(), out_.data());
  }
  posenc_status rope_cached(const posenc_rope_positions* positions) {
    return posenc_rope(nullptr, nullptr, cache_, positions, kBthd, POSENC_F32, kBatch, kTokens,
                       kHeads, kDim, x_.data(), out_.data());
  }

  // The call failed with `want`, its message names `argument`, out is as it was.
  void expect_rejected(posenc_status got, posenc_status want, const char* argument) {
    const std::string message = posenc_last_error();
    EXPECT_EQ(got, want) << message;
    EXPECT_NE(message.find(argument), std::string::npos)
        << "\"" << message << "\" does not name " << argument;
    EXPECT_TRUE(out_.payload_untouched()) << argument;
  }

  posenc_rope_config config_;
  posenc_rope_cache* cache_ = nullptr;
  GuardedFloats x_{kBatch * kTokens * kHeads * kDim, 0.5f};
  GuardedFloats out_{kBatch * kTokens * kHeads * kDim};
};

TEST_F(RopeErrors, RotaryDim) {
  for (int64_t rotary_dim : {7, 1, 0, -4, 10}) {  // odd, too small, above head_dim
    posenc_rope_config c = config_;
    c.rotary_dim = rotary_dim;
    expect_rejected(rope(c), POSENC_ERROR_INVALID_ARGUMENT, "rotary_dim");
  }
  posenc_rope_config c = config_;
  c.rotary_dim = 6;
  c.grid_width = 3;  // 2D needs a multiple of 4
  expect_rejected(rope(c), POSENC_ERROR_INVALID_ARGUMENT, "rotary_dim");
  c.rotary_dim = 5;
  posenc_rope_cache* cache = nullptr;
  expect_rejected(posenc_rope_cache_create(nullptr, &c, 8, &cache),
                  POSENC_ERROR_INVALID_ARGUMENT, "rotary_dim");
  EXPECT_EQ(cache, nullptr);
}

// Far above any head: refused by name before a frequency table is made
// (2^62 once failed in std::vector, 2^40 with "out of memory").
TEST_F(RopeErrors, HugeRotaryDim) {
  for (int64_t rotary_dim : {int64_t(1) << 62, int64_t(1) << 40, (int64_t(1) << 16) + 2}) {
    posenc_rope_config c = config_;
    c.rotary_dim = rotary_dim;
    posenc_rope_cache* cache = nullptr;
    expect_rejected(posenc_rope_cache_create(nullptr, &c, 1, &cache),
                    POSENC_ERROR_INVALID_ARGUMENT, "rotary_dim");
    EXPECT_EQ(cache, nullptr);
    double inv_freq[4] = {};
    expect_rejected(posenc_rope_inverse_frequencies(&c, inv_freq, nullptr),
                    POSENC_ERROR_INVALID_ARGUMENT, "rotary_dim");
    expect_rejected(posenc_rope(nullptr, &c, nullptr, nullptr, kBthd, POSENC_F32, 1, 1, 1,
                                INT64_MAX, x_.data(), out_.data()),
                    POSENC_ERROR_INVALID_ARGUMENT, "rotary_dim");
  }
}

// Negative enums (fields and arguments) are refused before use.
TEST_F(RopeErrors, NegativeEnums) {
  posenc_rope_config c = config_;
  store_enum(c.pairing, -1);
  expect_rejected(rope(c), POSENC_ERROR_INVALID_ARGUMENT, "pairing");
  c = config_;
  store_enum(c.scaling, -1);
  expect_rejected(rope(c), POSENC_ERROR_INVALID_ARGUMENT, "scaling");
  const int64_t ids[kBatch * kTokens] = {0, 1, 2, 3};
  posenc_rope_positions positions{0, ids, POSENC_ROPE_POSITIONS_INT64};
  store_enum(positions.ids_type, -1);
  expect_rejected(rope(config_, &positions), POSENC_ERROR_INVALID_ARGUMENT,
                  "positions.ids_type");
  GuardedFloats small(2 * kTokens * kDim);  // [1, 4, 1, 8] for out, q_out and k_out
  expect_rejected(c_rope(&config_, -1, POSENC_F32, x_.data(), small.data()),
                  POSENC_ERROR_INVALID_ARGUMENT, "layout");
  expect_rejected(c_rope(&config_, kBthd, -1, x_.data(), small.data()),
                  POSENC_ERROR_INVALID_ARGUMENT, "dtype");
  expect_rejected(c_rope_qk(&config_, -1, POSENC_F32, x_.data(), small.data(), x_.data(),
                            small.data() + kTokens * kDim),
                  POSENC_ERROR_INVALID_ARGUMENT, "layout");
  EXPECT_TRUE(small.payload_untouched());
}

// Tensors and ids aligned to their elements (core.h), else refused by name.
TEST_F(RopeErrors, MisalignedTensors) {
  auto call = [&](const void* x, void* out, posenc_dtype dtype,
                  const posenc_rope_positions* positions) {
    return posenc_rope(nullptr, &config_, nullptr, positions, kBthd, dtype, kBatch, kTokens,
                       kHeads, kDim, x, out);
  };
  expect_rejected(call(offset_bytes(x_.data(), 2), out_.data(), POSENC_F32, nullptr),
                  POSENC_ERROR_INVALID_ARGUMENT, "x");
  expect_rejected(call(x_.data(), offset_bytes(out_.data(), 1), POSENC_BF16, nullptr),
                  POSENC_ERROR_INVALID_ARGUMENT, "out");
  int64_t ids[kBatch * kTokens + 1] = {0, 1, 2, 3, 4};
  const posenc_rope_positions odd_ids{0, offset_bytes(ids, 4), POSENC_ROPE_POSITIONS_INT64};
  expect_rejected(call(x_.data(), out_.data(), POSENC_F32, &odd_ids),
                  POSENC_ERROR_INVALID_ARGUMENT, "positions.ids");
  const posenc_rope_positions odd_ids32{0, offset_bytes(ids, 2), POSENC_ROPE_POSITIONS_INT32};
  expect_rejected(call(x_.data(), out_.data(), POSENC_F32, &odd_ids32),
                  POSENC_ERROR_INVALID_ARGUMENT, "positions.ids");
  double inv_freq[kDim / 2 + 1] = {};
  expect_rejected(posenc_rope_inverse_frequencies(&config_, offset_bytes(inv_freq, 4), nullptr),
                  POSENC_ERROR_INVALID_ARGUMENT, "inv_freq");
  for (double f : inv_freq) EXPECT_EQ(f, 0.0);
  // The attention factor too, and it must not overlap the frequencies (the
  // frequencies were written first).
  double factor[2] = {};
  expect_rejected(posenc_rope_inverse_frequencies(&config_, inv_freq, offset_bytes(factor, 1)),
                  POSENC_ERROR_INVALID_ARGUMENT, "attention_factor");
  expect_rejected(posenc_rope_inverse_frequencies(&config_, inv_freq, &inv_freq[kDim / 2 - 1]),
                  POSENC_ERROR_ALIASING, "attention_factor");
  for (double f : inv_freq) EXPECT_EQ(f, 0.0);
  for (double f : factor) EXPECT_EQ(f, 0.0);
  ASSERT_EQ(posenc_rope_inverse_frequencies(&config_, inv_freq, &inv_freq[kDim / 2]), POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(inv_freq[kDim / 2], 1.0);  // just past them
}

TEST_F(RopeErrors, ConfigFields) {
  struct Bad {
    const char* field;
    void (*set)(posenc_rope_config&);
  };
  const Bad bad[] = {
      {"pairing", [](posenc_rope_config& c) { c.pairing = posenc_rope_pairing(5); }},
      {"base", [](posenc_rope_config& c) { c.base = 1.0; }},
      {"base", [](posenc_rope_config& c) { c.base = 0x1p-65; }},  // frequencies above 2^64
      {"grid_width", [](posenc_rope_config& c) { c.grid_width = -1; }},
      {"column_first", [](posenc_rope_config& c) { c.column_first = 2; }},
      {"column_first",  // refused in 1D too, where it is not read
       [](posenc_rope_config& c) {
         c.grid_width = 0;
         c.column_first = -1;
       }},
      {"scaling", [](posenc_rope_config& c) { c.scaling = posenc_rope_scaling(9); }},
      {"factor",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_LINEAR;
         c.factor = 0;
       }},
      {"factor",  // 1 / s overflows even in double: NaN rows, once
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_LINEAR;
         c.factor = 5e-324;
       }},
      {"factor",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.factor = 0x1p-65;
       }},
      {"original_max_positions",
       [](posenc_rope_config& c) { c.scaling = POSENC_ROPE_SCALING_LLAMA3; }},
      {"sequence_length",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_DYNAMIC_NTK;
         c.original_max_positions = 16;
       }},
      {"rotary_dim",
       [](posenc_rope_config& c) {  // F/(F-2) needs F > 2
         c.scaling = POSENC_ROPE_SCALING_DYNAMIC_NTK;
         c.original_max_positions = c.sequence_length = 16;
         c.rotary_dim = 2;
       }},
      {"extrapolation_factor",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.extrapolation_factor = 1.5;
       }},
      {"attention_factor",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.attention_factor = -1.0;
       }},
      {"attention_factor",  // 1e39 made infinite rows
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.attention_factor = 0x1p65;
       }},
      {"beta_fast",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.beta_fast = 0.5;  // below beta_slow's 1
       }},
      {"beta_slow",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.beta_slow = 0.0;
       }},
      {"fractional_correction_range",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_YARN;
         c.original_max_positions = 16;
         c.fractional_correction_range = 2;
       }},
      {"low_freq_factor",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_LLAMA3;
         c.original_max_positions = 16;
         c.low_freq_factor = 0.0;
       }},
      {"high_freq_factor",
       [](posenc_rope_config& c) {
         c.scaling = POSENC_ROPE_SCALING_LLAMA3;
         c.original_max_positions = 16;
         c.high_freq_factor = 1.0;
       }},
  };
  for (const Bad& b : bad) {
    posenc_rope_config c = config_;
    b.set(c);
    expect_rejected(rope(c), POSENC_ERROR_INVALID_ARGUMENT, b.field);
    double inv_freq[4];
    expect_rejected(posenc_rope_inverse_frequencies(&c, inv_freq, nullptr),
                    POSENC_ERROR_INVALID_ARGUMENT, b.field);
  }
}

// The smallest base and factor taken (frequencies near 2^127 at rotary_dim
// 128, angles near 2^180 at the last position taken without a cache), and
// the largest YaRN attention factor, give finite rows.
TEST_F(RopeErrors, ExtremeConfigsGiveFiniteRows) {
  constexpr int64_t kWideDim = 128;
  posenc_rope_config smallest;
  ASSERT_EQ(posenc_rope_config_init(&smallest, kWideDim), POSENC_OK);
  smallest.scaling = POSENC_ROPE_SCALING_LINEAR;
  smallest.factor = 0x1p-64;
  posenc_rope_config largest_attention;
  ASSERT_EQ(posenc_rope_config_init(&largest_attention, kWideDim), POSENC_OK);
  largest_attention.scaling = POSENC_ROPE_SCALING_YARN;
  largest_attention.original_max_positions = 16;
  largest_attention.attention_factor = 0x1p64;
  GuardedFloats x(kTokens * kWideDim, 0.5f), out(kTokens * kWideDim);
  for (double base : {10000.0, 0x1p-64}) {
    for (posenc_rope_config c : {smallest, largest_attention}) {
      c.base = base;
      for (int64_t offset : {int64_t(0), int64_t(1), (int64_t(1) << 53) - kTokens}) {
        const posenc_rope_positions at{offset, nullptr, POSENC_ROPE_POSITIONS_INT32};
        ASSERT_EQ(posenc_rope(nullptr, &c, nullptr, &at, kBthd, POSENC_F32, 1, kTokens, 1,
                              kWideDim, x.data(), out.data()),
                  POSENC_OK)
            << posenc_last_error();
        for (int64_t i = 0; i < kTokens * kWideDim; ++i) {
          ASSERT_TRUE(std::isfinite(out.data()[i]))
              << "base " << base << " scaling " << c.scaling << " offset " << offset << ": " << i;
        }
      }
    }
  }
}

TEST_F(RopeErrors, PositionsOutsideTheRange) {
  posenc_rope_positions past_cache{7, nullptr, POSENC_ROPE_POSITIONS_INT32};  // 7 + 4 > 10
  expect_rejected(rope_cached(&past_cache), POSENC_ERROR_INVALID_ARGUMENT, "positions");
  posenc_rope_positions negative{-1, nullptr, POSENC_ROPE_POSITIONS_INT32};
  expect_rejected(rope(config_, &negative), POSENC_ERROR_INVALID_ARGUMENT, "positions");
  posenc_rope_positions past_2_53{(int64_t(1) << 53) - 3, nullptr, POSENC_ROPE_POSITIONS_INT32};
  expect_rejected(rope(config_, &past_2_53), POSENC_ERROR_INVALID_ARGUMENT, "positions");

  const int32_t ids32[kTokens] = {0, 3, 10, 1};  // 10 is past the cache
  posenc_rope_positions by_ids32{0, ids32, POSENC_ROPE_POSITIONS_INT32};
  expect_rejected(rope_cached(&by_ids32), POSENC_ERROR_INVALID_ARGUMENT, "positions");
  const int64_t ids64[kTokens] = {0, -2, 1, 1};
  posenc_rope_positions by_ids64{0, ids64, POSENC_ROPE_POSITIONS_INT64};
  expect_rejected(rope(config_, &by_ids64), POSENC_ERROR_INVALID_ARGUMENT, "positions");

  const int64_t good[kTokens] = {0, 1, 2, 3};
  posenc_rope_positions with_offset{2, good, POSENC_ROPE_POSITIONS_INT64};
  expect_rejected(rope(config_, &with_offset), POSENC_ERROR_INVALID_ARGUMENT, "positions");
  posenc_rope_positions bad_type{0, good, posenc_rope_position_type(3)};
  expect_rejected(rope(config_, &bad_type), POSENC_ERROR_INVALID_ARGUMENT, "positions");
}

TEST_F(RopeErrors, ShapesEnumsAndPointers) {
  float* x = x_.data();
  float* out = out_.data();
  const posenc_rope_config* c = &config_;
  expect_rejected(posenc_rope(nullptr, nullptr, nullptr, nullptr, kBthd, POSENC_F32, 1, 4, 2, 8,
                              x, out),
                  POSENC_ERROR_NULL_POINTER, "config");
  expect_rejected(posenc_rope(nullptr, c, cache_, nullptr, kBthd, POSENC_F32, 1, 4, 2, 8, x, out),
                  POSENC_ERROR_INVALID_ARGUMENT, "cache");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, posenc_rope_layout(2), POSENC_F32, 1,
                              4, 2, 8, x, out),
                  POSENC_ERROR_INVALID_ARGUMENT, "layout");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, kBthd, posenc_dtype(4), 1, 4, 2, 8, x,
                              out),
                  POSENC_ERROR_INVALID_ARGUMENT, "dtype");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, kBthd, POSENC_F32, -1, 4, 2, 8, x, out),
                  POSENC_ERROR_INVALID_ARGUMENT, "batch");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, kBthd, POSENC_F32, 1, 4, -1, 8, x, out),
                  POSENC_ERROR_INVALID_ARGUMENT, "heads");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, kBthd, POSENC_F32, 1, 4, 2, 8,
                              nullptr, out),
                  POSENC_ERROR_NULL_POINTER, "x");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, kBthd, POSENC_F32, INT64_MAX / 4, 4,
                              2, 8, x, out),
                  POSENC_ERROR_OVERFLOW, "x");
  expect_rejected(posenc_rope(nullptr, c, nullptr, nullptr, kBthd, POSENC_F32, 1, 4, 2, 8, x,
                              x + 1),
                  POSENC_ERROR_ALIASING, "out");
  const int64_t ids[kTokens] = {0, 1, 2, 3};
  const posenc_rope_positions by_ids{0, ids, POSENC_ROPE_POSITIONS_INT64};
  expect_rejected(posenc_rope(nullptr, c, nullptr, &by_ids, kBthd, POSENC_F32, 1, 4, 2, 8, x,
                              reinterpret_cast<float*>(const_cast<int64_t*>(ids))),
                  POSENC_ERROR_ALIASING, "positions.ids");
}

TEST_F(RopeErrors, QkAliasingAndHeads) {
  GuardedFloats k(kBatch * kTokens * kDim);
  float* q = x_.data();
  float* q_out = out_.data();
  auto qk = [&](int64_t k_heads, const float* k_in, float* q_o, float* k_o) {
    return posenc_rope_qk(nullptr, &config_, nullptr, nullptr, kBthd, POSENC_F32, kBatch, kTokens,
                          kHeads, k_heads, kDim, q, q_o, k_in, k_o);
  };
  expect_rejected(qk(-1, k.data(), q_out, k.data()), POSENC_ERROR_INVALID_ARGUMENT, "k_heads");
  expect_rejected(qk(1, nullptr, q_out, k.data()), POSENC_ERROR_NULL_POINTER, "k");
  expect_rejected(qk(1, k.data(), q_out, q), POSENC_ERROR_ALIASING, "k_out");      // over q
  expect_rejected(qk(1, k.data(), q_out, q_out + 8), POSENC_ERROR_ALIASING, "q_out");
  expect_rejected(qk(1, k.data(), k.data(), k.data()), POSENC_ERROR_ALIASING, "q_out");
  EXPECT_TRUE(k.payload_untouched());
}

TEST_F(RopeErrors, CacheAndHelpers) {
  posenc_rope_cache* cache = nullptr;
  expect_rejected(posenc_rope_cache_create(nullptr, &config_, 0, &cache),
                  POSENC_ERROR_INVALID_ARGUMENT, "max_positions");
  expect_rejected(posenc_rope_cache_create(nullptr, &config_, INT64_MAX / 2, &cache),
                  POSENC_ERROR_OVERFLOW, "max_positions");
  expect_rejected(posenc_rope_cache_create(nullptr, nullptr, 4, &cache),
                  POSENC_ERROR_NULL_POINTER, "config");
  expect_rejected(posenc_rope_cache_create(nullptr, &config_, 4, nullptr),
                  POSENC_ERROR_NULL_POINTER, "cache");
  EXPECT_EQ(cache, nullptr);
  expect_rejected(posenc_rope_inverse_frequencies(&config_, nullptr, nullptr),
                  POSENC_ERROR_NULL_POINTER, "inv_freq");
  expect_rejected(posenc_rope_config_init(nullptr, 8), POSENC_ERROR_NULL_POINTER, "config");
  expect_rejected(posenc_rope_cache_config(nullptr, &config_), POSENC_ERROR_NULL_POINTER,
                  "cache");
  EXPECT_EQ(posenc_rope_cache_max_positions(nullptr), 0);
}

// posenc_rope_cache_create_from_tables refuses each bad argument by name
// and makes nothing; a position past the tables' is refused at the call.
TEST_F(RopeErrors, CacheFromTables) {
  const std::vector<float> cos(4 * 4, 1.0f), sin(4 * 4, 0.0f);  // 4 positions of 4 pairs
  posenc_rope_cache* cache = nullptr;
  const auto make = [&](int64_t rotary_dim, int32_t pairing, int64_t positions, const float* c,
                        const float* s, posenc_rope_cache** out) {
    return c_rope_cache_create_from_tables(rotary_dim, pairing, positions, c, s, out);
  };
  constexpr int kHalf = POSENC_ROPE_HALF_SPLIT;
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  expect_rejected(make(7, kHalf, 4, cos.data(), sin.data(), &cache), kInvalid, "rotary_dim");
  expect_rejected(make(0, kHalf, 4, cos.data(), sin.data(), &cache), kInvalid, "rotary_dim");
  expect_rejected(make(8, -1, 4, cos.data(), sin.data(), &cache), kInvalid, "pairing");
  expect_rejected(make(8, 2, 4, cos.data(), sin.data(), &cache), kInvalid, "pairing");
  expect_rejected(make(8, kHalf, 0, cos.data(), sin.data(), &cache), kInvalid, "max_positions");
  expect_rejected(make(8, kHalf, INT64_MAX / 4, cos.data(), sin.data(), &cache),
                  POSENC_ERROR_OVERFLOW, "max_positions");
  expect_rejected(make(8, kHalf, 4, nullptr, sin.data(), &cache), POSENC_ERROR_NULL_POINTER,
                  "cos");
  expect_rejected(make(8, kHalf, 4, cos.data(), nullptr, &cache), POSENC_ERROR_NULL_POINTER,
                  "sin");
  expect_rejected(make(8, kHalf, 4, offset_bytes(cos.data(), 2), sin.data(), &cache), kInvalid,
                  "cos");
  expect_rejected(make(8, kHalf, 4, cos.data(), sin.data(), nullptr), POSENC_ERROR_NULL_POINTER,
                  "cache");
  EXPECT_EQ(cache, nullptr);
  ASSERT_EQ(make(8, kHalf, 4, cos.data(), sin.data(), &cache), POSENC_OK) << posenc_last_error();
  const int64_t ids[kBatch * kTokens] = {0, 1, 2, 4};
  const posenc_rope_positions past{0, ids, POSENC_ROPE_POSITIONS_INT64};
  expect_rejected(posenc_rope(nullptr, nullptr, cache, &past, kBthd, POSENC_F32, kBatch, kTokens,
                              kHeads, kDim, x_.data(), out_.data()),
                  kInvalid, "positions");
  posenc_rope_config config = config_;
  expect_rejected(posenc_rope_cache_config(cache, &config), kInvalid, "no config");
  EXPECT_EQ(std::memcmp(&config, &config_, sizeof config), 0);
  // Reading them back: into two disjoint, aligned buffers of 16 floats.
  GuardedFloats both(32);
  expect_rejected(posenc_rope_cache_tables(nullptr, both.data(), both.data() + 16),
                  POSENC_ERROR_NULL_POINTER, "cache");
  expect_rejected(posenc_rope_cache_tables(cache, nullptr, both.data() + 16),
                  POSENC_ERROR_NULL_POINTER, "cos");
  expect_rejected(posenc_rope_cache_tables(cache, both.data(), offset_bytes(both.data(), 2)),
                  kInvalid, "sin");
  expect_rejected(posenc_rope_cache_tables(cache, both.data(), both.data() + 15),
                  POSENC_ERROR_ALIASING, "sin");
  EXPECT_TRUE(both.payload_untouched());
  ASSERT_EQ(posenc_rope_cache_tables(cache, both.data(), both.data() + 16), POSENC_OK);
  EXPECT_TRUE(both.guards_intact());
  EXPECT_EQ(std::vector<float>(both.data(), both.data() + 16), cos);
  EXPECT_EQ(std::vector<float>(both.data() + 16, both.data() + 32), sin);
  posenc_rope_cache_destroy(cache);
}

}  // namespace
}  // namespace posenc::test
