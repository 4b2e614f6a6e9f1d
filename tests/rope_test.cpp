// RoPE on every ISA path against the double reference loops, with the
// frequencies of every scaling from the formulas of posenc/rope.h
// (reference::rope_inverse_frequencies).
#include "reference/rope.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"

namespace posenc::test {
namespace {

// fp32 rotation of O(1) values with angles reduced in double.
constexpr double kF32Atol = 1e-5;
constexpr double kBf16Rtol = 1.0 / 256;  // rounding to bf16: up to 2^-8 relative

const posenc_rope_pairing kPairings[] = {POSENC_ROPE_INTERLEAVED, POSENC_ROPE_HALF_SPLIT};
const posenc_rope_layout kLayouts[] = {POSENC_ROPE_BTHD, POSENC_ROPE_BHTD};

posenc_rope_config make_config(int64_t rotary_dim, posenc_rope_pairing pairing) {
  posenc_rope_config config;
  EXPECT_EQ(posenc_rope_config_init(&config, rotary_dim), POSENC_OK);
  config.pairing = pairing;
  return config;
}

// One call's shapes and where its angles come from.
struct Problem {
  explicit Problem(const posenc_rope_config& c) : config(c) {}

  posenc_rope_config config;
  posenc_rope_layout layout = POSENC_ROPE_BTHD;
  int64_t batch = 2, tokens = 7, heads = 3, head_dim = 8;
  int64_t offset = 0;
  std::vector<int64_t> ids;    // empty: offset + t
  bool ids_int32 = false;
  int64_t cache_positions = 0;  // 0: on the fly

  size_t size() const { return size_t(batch * tokens * heads * head_dim); }
};

std::vector<int64_t> positions_of(const Problem& p) {
  if (!p.ids.empty()) return p.ids;
  std::vector<int64_t> positions(size_t(p.batch * p.tokens));
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = p.offset + int64_t(i) % p.tokens;
  return positions;
}

std::vector<double> reference_of(const Problem& p, const float* x) {
  return reference::rope(reference::rope_reference(p.config, p.layout, p.batch, p.tokens,
                                                   p.heads, p.head_dim, positions_of(p)),
                         x);
}

// Runs posenc_rope on x (float or bf16 bits) into out.
posenc_status run(posenc_context* context, const Problem& p, posenc_dtype dtype, const void* x,
                  void* out) {
  std::vector<int32_t> ids32(p.ids.begin(), p.ids.end());
  posenc_rope_positions positions{p.offset, nullptr, POSENC_ROPE_POSITIONS_INT64};
  if (!p.ids.empty()) {
    positions.ids = p.ids_int32 ? static_cast<const void*>(ids32.data()) : p.ids.data();
    positions.ids_type = p.ids_int32 ? POSENC_ROPE_POSITIONS_INT32 : POSENC_ROPE_POSITIONS_INT64;
  }
  posenc_rope_cache* cache = nullptr;
  if (p.cache_positions > 0) {
    const posenc_status s = posenc_rope_cache_create(context, &p.config, p.cache_positions, &cache);
    if (s != POSENC_OK) return s;
  }
  const posenc_status s =
      posenc_rope(context, cache ? nullptr : &p.config, cache, &positions, p.layout, dtype,
                  p.batch, p.tokens, p.heads, p.head_dim, x, out);
  posenc_rope_cache_destroy(cache);
  return s;
}

// Runs an fp32 problem on random x and compares with the reference.
::testing::AssertionResult matches_reference(posenc_context* context, const Problem& p,
                                             double atol = kF32Atol) {
  const std::vector<float> x = random_floats(p.size(), uint32_t(p.size() + p.offset));
  GuardedFloats out(p.size());
  const posenc_status s = run(context, p, POSENC_F32, x.data(), out.data());
  if (s != POSENC_OK) return ::testing::AssertionFailure() << posenc_last_error();
  if (!out.guards_intact()) return ::testing::AssertionFailure() << "wrote outside out";
  return all_close(out.data(), reference_of(p, x.data()), atol, 0.0);
}

// The rows of token t: [batch, 1, heads, dim] (BTHD) or [batch, heads, 1, dim].
template <class Value>
std::vector<Value> token_rows(const std::vector<Value>& x, const Problem& p, int64_t t) {
  std::vector<Value> rows;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t vector = p.layout == POSENC_ROPE_BTHD ? (b * p.tokens + t) * p.heads + h
                                                          : (b * p.heads + h) * p.tokens + t;
      rows.insert(rows.end(), x.begin() + vector * p.head_dim,
                  x.begin() + (vector + 1) * p.head_dim);
    }
  }
  return rows;
}

TEST(RopeFrequencies, EveryScalingMatchesFormulas) {
  std::vector<posenc_rope_config> configs;
  for (int64_t rotary_dim : {2, 4, 64, 80, 128}) {
    for (int scaling = 0; scaling <= POSENC_ROPE_SCALING_LLAMA3; ++scaling) {
      posenc_rope_config c = make_config(rotary_dim, POSENC_ROPE_HALF_SPLIT);
      c.scaling = posenc_rope_scaling(scaling);
      c.factor = 8.0;
      c.original_max_positions = 2048;
      c.sequence_length = 5000;
      if (c.scaling == POSENC_ROPE_SCALING_DYNAMIC_NTK && rotary_dim == 2) continue;
      configs.push_back(c);
    }
  }
  posenc_rope_config c = make_config(128, POSENC_ROPE_INTERLEAVED);
  c.scaling = POSENC_ROPE_SCALING_YARN;
  c.base = 500000.0;
  c.factor = 32.0;
  c.original_max_positions = 4096;
  c.extrapolation_factor = 0.5;
  c.attention_factor = 1.25;
  c.beta_fast = 16.0;
  c.beta_slow = 2.0;
  configs.push_back(c);
  c.fractional_correction_range = 1;
  configs.push_back(c);
  c.fractional_correction_range = 0;
  c.scaling = POSENC_ROPE_SCALING_LLAMA3;  // Llama 3.1: theta 500000, s 8, L0 8192
  c.factor = 8.0;
  c.original_max_positions = 8192;
  configs.push_back(c);
  c.scaling = POSENC_ROPE_SCALING_YARN;
  c.grid_width = 7;
  configs.push_back(c);
  c.scaling = POSENC_ROPE_SCALING_DYNAMIC_NTK;
  c.sequence_length = 100;  // <= L0: unscaled
  configs.push_back(c);

  for (const posenc_rope_config& config : configs) {
    SCOPED_TRACE(testing::Message() << "rotary_dim " << config.rotary_dim << " scaling "
                                    << config.scaling << " grid_width " << config.grid_width);
    std::vector<double> got(size_t(config.rotary_dim / 2));
    double attention = 0.0, want_attention = 0.0;
    ASSERT_EQ(posenc_rope_inverse_frequencies(&config, got.data(), &attention), POSENC_OK)
        << posenc_last_error();
    const std::vector<double> want = reference::rope_inverse_frequencies(config, &want_attention);
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-14 * want[j]) << j;
    EXPECT_DOUBLE_EQ(attention, want_attention);
  }
}

// YaRN's betas validation takes but whose correction dims' quotient L0 /
// (beta 2 pi) overflows or underflows (transformers raises OverflowError
// there): the dims stay finite, as their logs say, and so do the
// frequencies. Worked in logs for rotary_dim 8, L0 4096: dims (floor of the
// fast one, at least 0; ceiling of the slow one, at most 7) 309 and 7 for
// betas 2e-307 and 1e-307 (base 1e4), 4058 and -37 for 1.7e308 and 1
// (base 0.5, log base < 0), 0 and 5 for 32 and 2^-1074 (base 1e308).
TEST(RopeFrequencies, YarnBetasAtTheEndsOfTheDoubles) {
  posenc_rope_config c = make_config(8, POSENC_ROPE_HALF_SPLIT);
  c.factor = 4.0;
  c.original_max_positions = 4096;
  std::vector<double> plain(4), scaled(4);
  for (const auto& [beta_fast, beta_slow, base, low, high] :
       {std::tuple{2e-307, 1e-307, 1e4, 309.0, 7.0}, std::tuple{1.7e308, 1.0, 0.5, 4058.0, -37.0},
        std::tuple{32.0, 0x1p-1074, 1e308, 0.0, 5.0}}) {
    SCOPED_TRACE(testing::Message() << beta_fast << " " << beta_slow << " " << base);
    c.beta_fast = beta_fast;
    c.beta_slow = beta_slow;
    c.base = base;
    c.scaling = POSENC_ROPE_SCALING_NONE;
    ASSERT_EQ(posenc_rope_inverse_frequencies(&c, plain.data(), nullptr), POSENC_OK);
    c.scaling = POSENC_ROPE_SCALING_YARN;
    ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), nullptr), POSENC_OK)
        << posenc_last_error();
    for (size_t j = 0; j < scaled.size(); ++j) {
      const double ramp = std::clamp((double(j) - low) / (high - low), 0.0, 1.0);
      EXPECT_NEAR(scaled[j], ramp * plain[j] / 4.0 + (1.0 - ramp) * plain[j], 1e-14 * plain[j])
          << j;
    }
  }
}

// gpt-oss's YaRN frequencies (rotary_dim 64, theta 150000, s 32, L0 4096;
// the default betas 32 and 1, the range rounded).
posenc_rope_config gpt_oss_yarn() {
  posenc_rope_config c = make_config(64, POSENC_ROPE_HALF_SPLIT);
  c.base = 150000.0;
  c.scaling = POSENC_ROPE_SCALING_YARN;
  c.factor = 32.0;
  c.original_max_positions = 4096;
  return c;
}

// gpt-oss's YaRN with transformers' truncate = False, as gpt-oss sets it:
// the correction range is d(32) = 8.0928 to d(1) = 17.3980 (d(b) =
// 64 ln(4096 / (2 pi b)) / (2 ln 150000)), not rounded out to [8, 18];
// pairs below it keep w_j, pairs above are w_j / s.
TEST(RopeFrequencies, YarnFractionalCorrectionRange) {
  posenc_rope_config c = gpt_oss_yarn();
  std::vector<double> rounded(32), fractional(32);
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, rounded.data(), nullptr), POSENC_OK);
  c.fractional_correction_range = 1;
  double attention = 0.0;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, fractional.data(), &attention), POSENC_OK)
      << posenc_last_error();
  EXPECT_DOUBLE_EQ(attention, 0.1 * std::log(32.0) + 1.0);
  for (const auto& [range, got] : {std::tuple{std::pair{8.0, 18.0}, rounded},
                                   std::tuple{std::pair{8.092779115512402, 17.39802450158856},
                                              fractional}}) {
    for (size_t j = 0; j < got.size(); ++j) {
      const double w = std::pow(150000.0, -double(2 * j) / 64.0);
      const double ramp =
          std::clamp((double(j) - range.first) / (range.second - range.first), 0.0, 1.0);
      EXPECT_NEAR(got[j], ramp * w / 32.0 + (1.0 - ramp) * w, 1e-14 * w) << j;
    }
  }
  EXPECT_NE(rounded[9], fractional[9]);
}

// Equal betas (transformers warns only for beta_fast < beta_slow): gpt-oss's
// frequencies with betas 8 and 8, d(8) = 11.8149. Rounded the range is
// [11, 12]; fractional it is [11.8149, 11.8149 + 0.001], as transformers
// widens an empty one. Either way pairs up to 11 keep w_j, the rest w_j / s.
TEST(RopeFrequencies, YarnEqualBetasMakeAStep) {
  posenc_rope_config c = gpt_oss_yarn();
  c.beta_fast = c.beta_slow = 8.0;
  for (int fractional : {0, 1}) {
    c.fractional_correction_range = fractional;
    std::vector<double> got(32);
    ASSERT_EQ(posenc_rope_inverse_frequencies(&c, got.data(), nullptr), POSENC_OK)
        << posenc_last_error();
    for (size_t j = 0; j < got.size(); ++j) {
      const double w = std::pow(150000.0, -double(2 * j) / 64.0);
      EXPECT_NEAR(got[j], j <= 11 ? w : w / 32.0, 1e-14 * w) << fractional << " " << j;
    }
  }
}

// extrapolation_factor 0, llama.cpp's ext_factor 0: YaRN is then linear
// interpolation, and llama.cpp scales no magnitude (attention factor 1, not
// 0.1 ln s + 1), unless one is given.
TEST(RopeFrequencies, YarnWithoutExtrapolationIsLinear) {
  posenc_rope_config c = make_config(32, POSENC_ROPE_INTERLEAVED);
  c.scaling = POSENC_ROPE_SCALING_LINEAR;
  c.factor = 4.0;
  std::vector<double> linear(16), yarn(16);
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, linear.data(), nullptr), POSENC_OK);
  c.scaling = POSENC_ROPE_SCALING_YARN;
  c.original_max_positions = 1024;
  c.extrapolation_factor = 0.0;
  double attention = 0.0;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, yarn.data(), &attention), POSENC_OK);
  EXPECT_EQ(yarn, linear);
  EXPECT_EQ(attention, 1.0);
  c.attention_factor = 1.5;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, yarn.data(), &attention), POSENC_OK);
  EXPECT_EQ(attention, 1.5);
  c.attention_factor = 0.0;
  c.extrapolation_factor = 0.25;  // any extrapolation: llama.cpp's full default
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, yarn.data(), &attention), POSENC_OK);
  EXPECT_DOUBLE_EQ(attention, 0.1 * std::log(4.0) + 1.0);
}

// What each scaling must do, independent of how its formula is written.
TEST(RopeFrequencies, ScalingsKeepAndScaleTheRightPairs) {
  posenc_rope_config c = make_config(128, POSENC_ROPE_HALF_SPLIT);
  c.base = 500000.0;
  std::vector<double> plain(64), scaled(64);
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, plain.data(), nullptr), POSENC_OK);
  EXPECT_EQ(plain[0], 1.0);
  EXPECT_NEAR(plain[63], std::pow(500000.0, -126.0 / 128.0), 1e-20);

  c.scaling = POSENC_ROPE_SCALING_LLAMA3;
  c.factor = 8.0;
  c.original_max_positions = 8192;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), nullptr), POSENC_OK);
  EXPECT_EQ(scaled[0], plain[0]);                // wavelength 2 pi: kept
  EXPECT_DOUBLE_EQ(scaled[63], plain[63] / 8.0); // wavelength > 8192: interpolated
  EXPECT_GT(scaled[32], plain[32] / 8.0);       // wavelength in [2048, 8192]: smoothed
  EXPECT_LT(scaled[32], plain[32]);

  c.scaling = POSENC_ROPE_SCALING_YARN;
  double attention = 0.0;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), &attention), POSENC_OK);
  EXPECT_EQ(scaled[0], plain[0]);
  EXPECT_DOUBLE_EQ(scaled[63], plain[63] / 8.0);
  EXPECT_DOUBLE_EQ(attention, 0.1 * std::log(8.0) + 1.0);

  c.scaling = POSENC_ROPE_SCALING_DYNAMIC_NTK;
  c.sequence_length = 8192;  // not past L0: unchanged
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), nullptr), POSENC_OK);
  EXPECT_EQ(scaled, plain);
  c.sequence_length = 16384;  // base * (8 * 2 - 7)^(128/126)
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), nullptr), POSENC_OK);
  const double base = 500000.0 * std::pow(9.0, 128.0 / 126.0);
  EXPECT_NEAR(scaled[1], std::pow(base, -2.0 / 128.0), 1e-15);

  // A factor past 2^53: s L / L0 - (s - 1) is still 1 at L = L0, and s + 1
  // at L = 2 L0 (no cancellation to a zero base, whose powers are infinite).
  c.factor = 1e17;
  c.sequence_length = 8192;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), nullptr), POSENC_OK);
  EXPECT_EQ(scaled, plain);
  c.sequence_length = 16384;
  ASSERT_EQ(posenc_rope_inverse_frequencies(&c, scaled.data(), nullptr), POSENC_OK);
  const double huge_base = 500000.0 * std::pow(1e17 + 1.0, 128.0 / 126.0);
  for (int64_t j : {1, 20, 63}) {
    const double want = std::pow(huge_base, -2.0 * double(j) / 128.0);
    EXPECT_NEAR(scaled[size_t(j)], want, 1e-13 * want) << j;
  }
}

class Rope : public IsaTest {};

TEST_P(Rope, MatchesReference) {
  // Odd head sizes rotate an even part and copy the rest.
  for (int64_t head_dim : {2, 3, 8, 33, 64, 80, 128}) {
    for (int64_t rotary_dim : {head_dim, head_dim - 1, head_dim / 4 * 2, int64_t(6)}) {
      if (rotary_dim < 2 || rotary_dim > head_dim || rotary_dim % 2 != 0) continue;
      for (auto pairing : kPairings) {
        for (auto layout : kLayouts) {
          for (int64_t cache_positions : {0, 64}) {
            SCOPED_TRACE(testing::Message() << "head_dim " << head_dim << " rotary_dim "
                                            << rotary_dim << " pairing " << pairing << " layout "
                                            << layout << " cache " << cache_positions);
            Problem p{make_config(rotary_dim, pairing)};
            p.layout = layout;
            p.head_dim = head_dim;
            p.offset = 5;
            p.cache_positions = cache_positions;
            EXPECT_TRUE(matches_reference(context(), p));
          }
        }
      }
    }
  }
}

// Blocks of tokens with a tail, many heads, a large head.
TEST_P(Rope, LongSequence) {
  for (auto pairing : kPairings) {
    for (auto layout : kLayouts) {
      for (int64_t cache_positions : {0, 400}) {
        Problem p{make_config(128, pairing)};
        p.layout = layout;
        p.batch = 2;
        p.tokens = 300;
        p.heads = 5;
        p.head_dim = 128;
        p.offset = 77;
        p.cache_positions = cache_positions;
        EXPECT_TRUE(matches_reference(context(), p)) << pairing << " " << layout;
      }
    }
  }
}

// Angles reduced in double keep fp32 accuracy at positions up to 500000.
TEST_P(Rope, LargePositions) {
  for (auto pairing : kPairings) {
    Problem p{make_config(128, pairing)};
    p.head_dim = 128;
    p.tokens = 11;
    p.offset = 500000 - 10;
    EXPECT_TRUE(matches_reference(context(), p)) << "on the fly, contiguous";
    p.offset = 0;
    p.ids.resize(size_t(p.batch * p.tokens));
    for (size_t i = 0; i < p.ids.size(); ++i) p.ids[i] = int64_t(i * 45451 % 500001);
    EXPECT_TRUE(matches_reference(context(), p)) << "on the fly, ids";
    Problem small{make_config(8, pairing)};
    small.offset = 500001 - small.tokens;
    small.cache_positions = 500001;
    EXPECT_TRUE(matches_reference(context(), small)) << "cache";
  }
}

// One decode step at offset t equals token t of the full-sequence call.
TEST_P(Rope, DecodeStepsEqualFullSequence) {
  for (auto pairing : kPairings) {
    for (auto layout : kLayouts) {
      for (int64_t cache_positions : {0, 16}) {
        Problem full{make_config(48, pairing)};
        full.layout = layout;
        full.tokens = 10;
        full.head_dim = 64;
        full.cache_positions = cache_positions;
        const std::vector<float> x = random_floats(full.size(), 21);
        std::vector<float> want(x.size());
        ASSERT_EQ(run(context(), full, POSENC_F32, x.data(), want.data()), POSENC_OK);
        for (int64_t t = 0; t < full.tokens; ++t) {
          Problem step = full;
          step.tokens = 1;
          step.offset = t;
          const std::vector<float> xs = token_rows(x, full, t);
          std::vector<float> got(xs.size());
          ASSERT_EQ(run(context(), step, POSENC_F32, xs.data(), got.data()), POSENC_OK);
          EXPECT_EQ(got, token_rows(want, full, t)) << "token " << t << " layout " << layout;
        }
      }
    }
  }
}

TEST_P(Rope, ExplicitPositions) {
  for (auto pairing : kPairings) {
    for (bool int32 : {false, true}) {
      for (int64_t cache_positions : {0, 1000}) {
        Problem p{make_config(64, pairing)};
        p.layout = POSENC_ROPE_BHTD;
        p.tokens = 40;
        p.head_dim = 96;
        p.ids_int32 = int32;
        p.cache_positions = cache_positions;
        p.ids.resize(size_t(p.batch * p.tokens));
        for (size_t i = 0; i < p.ids.size(); ++i) p.ids[i] = int64_t(i * 7919 % 1000);
        EXPECT_TRUE(matches_reference(context(), p)) << int32 << " " << cache_positions;

        // ids offset + t give the bits of the contiguous call
        Problem contiguous = p;
        contiguous.ids.clear();
        contiguous.offset = 9;
        for (size_t i = 0; i < p.ids.size(); ++i) p.ids[i] = 9 + int64_t(i) % p.tokens;
        const std::vector<float> x = random_floats(p.size(), 5);
        std::vector<float> by_ids(x.size()), by_offset(x.size());
        ASSERT_EQ(run(context(), p, POSENC_F32, x.data(), by_ids.data()), POSENC_OK);
        ASSERT_EQ(run(context(), contiguous, POSENC_F32, x.data(), by_offset.data()), POSENC_OK);
        EXPECT_EQ(by_ids, by_offset);
      }
    }
  }
}

// bf16 rotations of odd and even pair counts (tails of every batch width,
// an odd last value among them) with values passed through after them: out
// of place against the reference, and in place with the same bits (a store
// past a tail would change a passed-through value there).
TEST_P(Rope, Bf16) {
  for (int64_t rotary_dim : {10, 14, 26, 30, 40}) {
    for (auto pairing : kPairings) {
      for (auto layout : kLayouts) {
        for (int64_t cache_positions : {0, 64}) {
          SCOPED_TRACE(testing::Message() << "rotary_dim " << rotary_dim << " pairing " << pairing
                                          << " layout " << layout << " cache " << cache_positions);
          Problem p{make_config(rotary_dim, pairing)};
          p.layout = layout;
          p.head_dim = 52;
          p.offset = 50;
          p.cache_positions = cache_positions;
          const std::vector<uint16_t> x = to_bf16(random_floats(p.size(), 8));
          std::vector<uint16_t> out(x.size());
          ASSERT_EQ(run(context(), p, POSENC_BF16, x.data(), out.data()), POSENC_OK)
              << posenc_last_error();
          EXPECT_TRUE(all_close_bf16(out.data(), reference_of(p, from_bf16(x).data()), kF32Atol,
                                     kBf16Rtol));
          const size_t passed = size_t(p.head_dim - rotary_dim);
          for (size_t v = 0; v < x.size(); v += size_t(p.head_dim)) {  // passed through
            EXPECT_EQ(0, std::memcmp(&out[v + size_t(rotary_dim)], &x[v + size_t(rotary_dim)],
                                     passed * sizeof(uint16_t)));
          }
          std::vector<uint16_t> in_place = x;
          ASSERT_EQ(run(context(), p, POSENC_BF16, in_place.data(), in_place.data()), POSENC_OK);
          EXPECT_EQ(in_place, out);
        }
      }
    }
  }
}

// x rotated in place has the bits of x rotated into another buffer.
template <class Value>
void expect_in_place_equals_out_of_place(posenc_context* context, const Problem& p,
                                         posenc_dtype dtype, const std::vector<Value>& x) {
  std::vector<Value> out(x.size()), in_place = x;
  ASSERT_EQ(run(context, p, dtype, x.data(), out.data()), POSENC_OK);
  ASSERT_EQ(run(context, p, dtype, in_place.data(), in_place.data()), POSENC_OK);
  EXPECT_EQ(out, in_place);
}

TEST_P(Rope, InPlaceEqualsOutOfPlace) {
  for (auto pairing : kPairings) {
    Problem p{make_config(60, pairing)};
    p.head_dim = 64;
    p.tokens = 35;
    const std::vector<float> x = random_floats(p.size(), 4);
    expect_in_place_equals_out_of_place(context(), p, POSENC_F32, x);
    expect_in_place_equals_out_of_place(context(), p, POSENC_BF16, to_bf16(x));
  }
}

// q and k together (fewer k heads) equal two separate calls, in and out of place.
TEST_P(Rope, QkEqualsTwoCalls) {
  for (auto pairing : kPairings) {
    for (auto layout : kLayouts) {
      posenc_rope_config config = make_config(32, pairing);
      posenc_rope_cache* cache = nullptr;
      ASSERT_EQ(posenc_rope_cache_create(context(), &config, 100, &cache), POSENC_OK);
      for (bool use_cache : {false, true}) {
        const posenc_rope_config* c = use_cache ? nullptr : &config;
        const posenc_rope_cache* k_cache = use_cache ? cache : nullptr;
        const int64_t batch = 2, tokens = 33, q_heads = 4, k_heads = 2, dim = 40;
        const posenc_rope_positions at{60, nullptr, POSENC_ROPE_POSITIONS_INT32};
        std::vector<float> q = random_floats(size_t(batch * tokens * q_heads * dim), 1);
        std::vector<float> k = random_floats(size_t(batch * tokens * k_heads * dim), 2);
        std::vector<float> q_want(q.size()), k_want(k.size()), q_got(q.size()), k_got(k.size());
        ASSERT_EQ(posenc_rope(context(), c, k_cache, &at, layout, POSENC_F32, batch, tokens,
                              q_heads, dim, q.data(), q_want.data()), POSENC_OK);
        ASSERT_EQ(posenc_rope(context(), c, k_cache, &at, layout, POSENC_F32, batch, tokens,
                              k_heads, dim, k.data(), k_want.data()), POSENC_OK);
        ASSERT_EQ(posenc_rope_qk(context(), c, k_cache, &at, layout, POSENC_F32, batch, tokens,
                                 q_heads, k_heads, dim, q.data(), q_got.data(), k.data(),
                                 k_got.data()),
                  POSENC_OK) << posenc_last_error();
        EXPECT_EQ(q_got, q_want);
        EXPECT_EQ(k_got, k_want);
        ASSERT_EQ(posenc_rope_qk(context(), c, k_cache, &at, layout, POSENC_F32, batch, tokens,
                                 q_heads, k_heads, dim, q.data(), q.data(), k.data(), k.data()),
                  POSENC_OK);
        EXPECT_EQ(q, q_want);
        EXPECT_EQ(k, k_want);
      }
      posenc_rope_cache_destroy(cache);
    }
  }
}

TEST_P(Rope, Scalings) {
  std::vector<posenc_rope_config> configs;
  posenc_rope_config c = make_config(64, POSENC_ROPE_HALF_SPLIT);
  c.original_max_positions = 128;
  c.factor = 4.0;
  for (int scaling = 1; scaling <= POSENC_ROPE_SCALING_LLAMA3; ++scaling) {
    c.scaling = posenc_rope_scaling(scaling);
    c.sequence_length = 400;
    configs.push_back(c);
  }
  c.scaling = POSENC_ROPE_SCALING_YARN;
  c.pairing = POSENC_ROPE_INTERLEAVED;
  c.extrapolation_factor = 0.25;
  c.attention_factor = 0.8;
  configs.push_back(c);
  c.fractional_correction_range = 1;  // after the rounded one: the thread's angles are not reused
  configs.push_back(c);
  for (const posenc_rope_config& config : configs) {
    for (int64_t cache_positions : {0, 512}) {
      Problem p{config};
      p.head_dim = 72;
      p.tokens = 45;
      p.offset = 350;
      p.cache_positions = cache_positions;
      EXPECT_TRUE(matches_reference(context(), p)) << "scaling " << config.scaling;
    }
  }
}

TEST_P(Rope, Axial2d) {
  const int64_t height = 3, width = 5;  // non-square
  for (int64_t rotary_dim : {16, 8}) {
    for (auto pairing : kPairings) {
      for (auto layout : kLayouts) {
        for (int64_t cache_positions : {int64_t(0), height * width}) {
          for (int column_first : {0, 1}) {
            Problem p{make_config(rotary_dim, pairing)};
            p.config.grid_width = width;
            p.config.column_first = column_first;
            p.layout = layout;
            p.tokens = height * width;
            p.head_dim = 16;
            p.cache_positions = cache_positions;
            EXPECT_TRUE(matches_reference(context(), p))
                << rotary_dim << " " << pairing << " " << layout << " " << cache_positions << " "
                << column_first;
            p.ids = {14, 0, 7, 3, 9, 11, 2, 4, 13, 1, 5, 6, 8, 10, 12};  // a subset, MAE-style
            p.ids.insert(p.ids.end(), p.ids.begin(), p.ids.begin() + 15);
            p.tokens = 15;
            EXPECT_TRUE(matches_reference(context(), p)) << "ids";
          }
        }
      }
    }
  }
}

// Cells of row 0 rotate only the column pairs: the row pairs stay as they are.
TEST_P(Rope, Axial2dRowPairsComeFirst) {
  posenc_rope_config config = make_config(16, POSENC_ROPE_INTERLEAVED);
  config.grid_width = 6;
  const std::vector<float> x = random_floats(6 * 16, 3);
  std::vector<float> out(x.size());
  ASSERT_EQ(posenc_rope(context(), &config, nullptr, nullptr, POSENC_ROPE_BTHD, POSENC_F32, 1,
                        6, 1, 16, x.data(), out.data()),
            POSENC_OK);
  for (int64_t y = 1; y < 6; ++y) {
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(out[size_t(y * 16 + i)], x[size_t(y * 16 + i)]);
    EXPECT_NE(out[size_t(y * 16 + 8)], x[size_t(y * 16 + 8)]);
  }
}

// column_first as SAM 2 defines its axial RoPE (compute_axial_cis(dim, end_x,
// end_y, theta), apply_rotary_enc): token t of an end_x-wide grid has
// t_x = t % end_x and t_y = t // end_x; frequencies f_j = theta^(-4j/dim)
// for j < dim/4; pair j of the interleaved pairs turns by t_x f_j, pair
// dim/4 + j by t_y f_j, as the complex product (x0 + i x1) e^(i angle).
// A 3-row, 5-wide grid, dim 16, theta 10000, on the fly and from a cache.
TEST_P(Rope, Axial2dColumnFirstIsSam2) {
  const int64_t end_x = 5, end_y = 3, dim = 16, tokens = end_x * end_y;
  posenc_rope_config config = make_config(dim, POSENC_ROPE_INTERLEAVED);
  config.grid_width = end_x;
  config.column_first = 1;
  const std::vector<float> x = random_floats(size_t(tokens * dim), 8);
  std::vector<double> want(x.size());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < dim / 2; ++j) {
      const double f = std::pow(10000.0, -double(4 * (j % (dim / 4))) / double(dim));
      const double angle = double(j < dim / 4 ? t % end_x : t / end_x) * f;
      const double x0 = x[size_t(t * dim + 2 * j)], x1 = x[size_t(t * dim + 2 * j + 1)];
      want[size_t(t * dim + 2 * j)] = x0 * std::cos(angle) - x1 * std::sin(angle);
      want[size_t(t * dim + 2 * j + 1)] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
  }
  posenc_rope_cache* cache = nullptr;
  ASSERT_EQ(posenc_rope_cache_create(context(), &config, tokens, &cache), POSENC_OK);
  for (const bool cached : {false, true}) {
    std::vector<float> out(x.size());
    ASSERT_EQ(posenc_rope(context(), cached ? nullptr : &config, cached ? cache : nullptr,
                          nullptr, POSENC_ROPE_BTHD, POSENC_F32, 1, tokens, 1, dim, x.data(),
                          out.data()),
              POSENC_OK)
        << posenc_last_error();
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << cached << i;
  }
  posenc_rope_cache_destroy(cache);
}

// The cos and sin tables [positions, rotary_dim/2] of 1D angles p * w_j
// times `attention`, each computed in double and rounded once, as a model's
// own buffers (or ONNX Runtime's cos_cache and sin_cache) hold them.
RopeTables tables_of(const std::vector<double>& inv_freq, double attention, int64_t positions) {
  RopeTables t;
  for (int64_t p = 0; p < positions; ++p) {
    for (double w : inv_freq) {
      t.cos.push_back(float(attention * std::cos(double(p) * w)));
      t.sin.push_back(float(attention * std::sin(double(p) * w)));
    }
  }
  return t;
}

posenc_rope_cache* cache_of_tables(posenc_context* context, const posenc_rope_config& config,
                                   const RopeTables& t) {
  posenc_rope_cache* cache = nullptr;
  const int64_t positions = int64_t(t.cos.size()) / (config.rotary_dim / 2);
  EXPECT_EQ(posenc_rope_cache_create_from_tables(context, config.rotary_dim, config.pairing,
                                                 positions, t.cos.data(), t.sin.data(), &cache),
            POSENC_OK)
      << posenc_last_error();
  return cache;
}

// A cache of a config's tables (YaRN's frequencies and attention factor,
// partial rotation) holds the config cache's rows: both give those tables
// back, and q and k rotate with the same bits, fp32 and bf16, at an offset
// and at explicit positions, every pairing and layout. The cache of tables
// has no config to give.
TEST_P(Rope, CacheFromTablesIsTheConfigsCache) {
  for (auto pairing : kPairings) {
    posenc_rope_config config = make_config(24, pairing);
    config.scaling = POSENC_ROPE_SCALING_YARN;
    config.factor = 4.0;
    config.original_max_positions = 64;
    std::vector<double> inv_freq(12);
    double attention = 0.0;
    ASSERT_EQ(posenc_rope_inverse_frequencies(&config, inv_freq.data(), &attention), POSENC_OK);
    const RopeTables tables = tables_of(inv_freq, attention, 300);
    posenc_rope_cache* from_tables = cache_of_tables(context(), config, tables);
    posenc_rope_cache* from_config = nullptr;
    ASSERT_EQ(posenc_rope_cache_create(context(), &config, 300, &from_config), POSENC_OK);
    for (const posenc_rope_cache* cache : {from_tables, from_config}) {
      RopeTables back{std::vector<float>(tables.cos.size()), std::vector<float>(tables.sin.size())};
      ASSERT_EQ(posenc_rope_cache_tables(cache, back.cos.data(), back.sin.data()), POSENC_OK)
          << posenc_last_error();
      EXPECT_EQ(back.cos, tables.cos) << pairing;
      EXPECT_EQ(back.sin, tables.sin) << pairing;
    }
    posenc_rope_config copy;
    EXPECT_EQ(posenc_rope_cache_config(from_tables, &copy), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(posenc_last_error()).find("no config"), std::string::npos);
    EXPECT_EQ(posenc_rope_cache_max_positions(from_tables), 300);
    const int64_t batch = 2, tokens = 37, q_heads = 4, k_heads = 2, dim = 32;
    std::vector<int64_t> ids(size_t(batch * tokens));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i * 131 % 300);
    for (auto layout : kLayouts) {
      for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
        for (bool explicit_ids : {false, true}) {
          const posenc_rope_positions at =
              explicit_ids ? posenc_rope_positions{0, ids.data(), POSENC_ROPE_POSITIONS_INT64}
                           : posenc_rope_positions{250, nullptr, POSENC_ROPE_POSITIONS_INT64};
          std::vector<float> q = random_floats(size_t(batch * tokens * q_heads * dim), 5);
          std::vector<float> k = random_floats(size_t(batch * tokens * k_heads * dim), 6);
          std::vector<float> want_q(q.size()), want_k(k.size()), got_q(q.size()),
              got_k(k.size());
          if (dtype == POSENC_BF16) {  // bf16 bits in the first half of each buffer (and out)
            const std::vector<uint16_t> qb = to_bf16(q), kb = to_bf16(k);
            std::memcpy(q.data(), qb.data(), qb.size() * sizeof(uint16_t));
            std::memcpy(k.data(), kb.data(), kb.size() * sizeof(uint16_t));
          }
          for (auto [cache, q_out, k_out] : {std::tuple{from_config, &want_q, &want_k},
                                             std::tuple{from_tables, &got_q, &got_k}}) {
            ASSERT_EQ(posenc_rope_qk(context(), nullptr, cache, &at, layout, dtype, batch, tokens,
                                     q_heads, k_heads, dim, q.data(), q_out->data(), k.data(),
                                     k_out->data()),
                      POSENC_OK)
                << posenc_last_error();
          }
          EXPECT_EQ(got_q, want_q) << pairing << " " << layout << " " << dtype << " "
                                   << explicit_ids;
          EXPECT_EQ(got_k, want_k);
        }
      }
    }
    posenc_rope_cache_destroy(from_tables);
    posenc_rope_cache_destroy(from_config);
  }
}

// Tables of angles posenc does not compute: LongRoPE-like per-pair rescale
// factors r_j (w_j = theta^(-2j/d) / r_j) and an attention factor, against
// the reference rotation with those frequencies, partial rotation (26 of
// 40), every pairing and layout, offsets and explicit positions.
TEST_P(Rope, CacheFromTablesOfAnyAngles) {
  for (auto pairing : kPairings) {
    for (auto layout : kLayouts) {
      Problem p{make_config(26, pairing)};
      p.layout = layout;
      p.head_dim = 40;
      p.tokens = 45;
      std::vector<double> inv_freq;
      for (int64_t j = 0; j < 13; ++j) {
        inv_freq.push_back(std::pow(10000.0, -double(2 * j) / 26.0) / (1.0 + 0.37 * double(j)));
      }
      const double attention = 1.19;
      const RopeTables tables = tables_of(inv_freq, attention, 512);
      posenc_rope_cache* cache = cache_of_tables(context(), p.config, tables);
      for (bool explicit_ids : {false, true}) {
        p.offset = explicit_ids ? 0 : 467;
        p.ids.clear();
        for (int64_t i = 0; explicit_ids && i < p.batch * p.tokens; ++i) {
          p.ids.push_back(i * 97 % 512);
        }
        const std::vector<float> x = random_floats(p.size(), 9);
        GuardedFloats out(p.size());
        const posenc_rope_positions at{p.offset, p.ids.empty() ? nullptr : p.ids.data(),
                                       POSENC_ROPE_POSITIONS_INT64};
        ASSERT_EQ(posenc_rope(context(), nullptr, cache, &at, p.layout, POSENC_F32, p.batch,
                              p.tokens, p.heads, p.head_dim, x.data(), out.data()),
                  POSENC_OK)
            << posenc_last_error();
        EXPECT_TRUE(out.guards_intact());
        reference::RopeReference r = reference::rope_reference(
            p.config, p.layout, p.batch, p.tokens, p.heads, p.head_dim, positions_of(p));
        r.inv_freq = inv_freq;
        r.attention_factor = attention;
        EXPECT_TRUE(all_close(out.data(), reference::rope(r, x.data()), kF32Atol, 0.0))
            << pairing << " " << layout << " " << explicit_ids;
      }
      posenc_rope_cache_destroy(cache);
    }
  }
}

TEST_P(Rope, CacheSharedByThreads) {
  const posenc_rope_config config = make_config(64, POSENC_ROPE_INTERLEAVED);
  posenc_rope_cache* cache = nullptr;
  ASSERT_EQ(posenc_rope_cache_create(context(), &config, 256, &cache), POSENC_OK);
  const int64_t tokens = 200, heads = 4, dim = 64;
  const std::vector<float> x = random_floats(size_t(tokens * heads * dim), 6);
  std::vector<float> want(x.size());
  ASSERT_EQ(posenc_rope(context(), nullptr, cache, nullptr, POSENC_ROPE_BTHD, POSENC_F32, 1,
                        tokens, heads, dim, x.data(), want.data()),
            POSENC_OK);
  std::vector<std::vector<float>> got(4, std::vector<float>(x.size()));
  std::vector<posenc_status> status(got.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      status[i] = posenc_rope(context(), nullptr, cache, nullptr, POSENC_ROPE_BTHD, POSENC_F32,
                              1, tokens, heads, dim, x.data(), got[i].data());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(status[i], POSENC_OK);
    EXPECT_EQ(got[i], want);
  }
  posenc_rope_config copy;
  ASSERT_EQ(posenc_rope_cache_config(cache, &copy), POSENC_OK);
  EXPECT_EQ(copy.rotary_dim, 64);
  EXPECT_EQ(posenc_rope_cache_max_positions(cache), 256);
  posenc_rope_cache_destroy(cache);
}

POSENC_INSTANTIATE_ISA_TESTS(Rope);

TEST(RopeCpp, CacheConfigAndErrors) {
  posenc::Context context;
  const posenc_rope_config config = posenc::rope_config(8, posenc::RopePairing::interleaved);
  posenc::RopeCache cache(context, config, 16);
  EXPECT_EQ(cache.max_positions(), 16);
  std::vector<float> q(3 * 2 * 8, 0.5f), k(3 * 1 * 8, 0.25f), with_cache(q.size());
  posenc::rope(context, cache, posenc::RopeLayout::bthd, 1, 3, 2, 8, q.data(), with_cache.data(),
               posenc::rope_offset(4));
  posenc::rope_qk(context, config, posenc::RopeLayout::bthd, 1, 3, 2, 1, 8, q.data(), q.data(),
                  k.data(), k.data(), posenc::rope_offset(4));
  EXPECT_TRUE(all_close(q.data(), std::vector<double>(with_cache.begin(), with_cache.end()),
                        1e-6, 0.0));
  const int32_t ids[3] = {0, 1, 16};
  try {
    posenc::rope(context, cache, posenc::RopeLayout::bthd, 1, 3, 2, 8, q.data(), q.data(),
                 posenc::rope_ids(ids));
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("positions"), std::string::npos);
  }
  // A cache of tables: the on-the-fly rotation's, up to fp32 rounding.
  std::vector<double> inv_freq(4);
  ASSERT_EQ(posenc_rope_inverse_frequencies(&config, inv_freq.data(), nullptr), POSENC_OK);
  const RopeTables t = tables_of(inv_freq, 1.0, 16);
  const posenc::RopeCache tables = posenc::RopeCache::from_tables(
      context, 8, posenc::RopePairing::interleaved, 16, t.cos.data(), t.sin.data());
  EXPECT_EQ(tables.max_positions(), 16);
  EXPECT_EQ(tables.rotary_dim(), 8);
  const posenc::RopeTables back = tables.tables();
  EXPECT_EQ(back.cos, t.cos);
  EXPECT_EQ(back.sin, t.sin);
  EXPECT_EQ(cache.tables().cos, t.cos);  // the config's, the same values
  std::vector<float> with_tables(q.size());
  posenc::rope(context, tables, posenc::RopeLayout::bthd, 1, 3, 2, 8, with_cache.data(),
               with_tables.data(), posenc::rope_offset(4));
  posenc::rope(context, cache, posenc::RopeLayout::bthd, 1, 3, 2, 8, with_cache.data(),
               with_cache.data(), posenc::rope_offset(4));
  EXPECT_EQ(with_tables, with_cache);
  EXPECT_THROW(tables.config(), posenc::Error);
  const posenc_rope_config odd = posenc::rope_config(7);
  EXPECT_THROW(posenc::rope(context, odd, posenc::RopeLayout::bthd, 1, 3, 2, 8, q.data(),
                            q.data()),
               posenc::Error);
}

// Count axes of 0 (batch, tokens, heads; rope_qk's q_heads and k_heads
// together): POSENC_OK with NULL or real tensors, nothing written; the
// config, cache, positions and the other arguments are still checked.
TEST(RopeEmptyCalls, RopeAndRopeQk) {
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  constexpr auto kBthd = POSENC_ROPE_BTHD;
  posenc_rope_config config;
  ASSERT_EQ(posenc_rope_config_init(&config, 8), POSENC_OK);
  posenc_rope_cache* cache = nullptr;
  ASSERT_EQ(posenc_rope_cache_create(nullptr, &config, 8, &cache), POSENC_OK);
  GuardedFloats x(256, 0.5f), out(256), k(256, 0.25f), k_out(256);
  struct Sizes {
    int64_t batch, tokens, heads;
  };
  // Tokens 0 at the cache's end.
  const posenc_rope_positions at_end{8, nullptr, POSENC_ROPE_POSITIONS_INT64};
  for (const Sizes& s : {Sizes{0, 5, 3}, Sizes{2, 0, 3}, Sizes{2, 5, 0}, Sizes{0, 0, 0}}) {
    for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
      for (bool null : {true, false}) {
        const void* in = null ? nullptr : x.data();
        void* dst = null ? nullptr : out.data();
        EXPECT_EQ(posenc_rope(nullptr, &config, nullptr, nullptr, POSENC_ROPE_BHTD, dtype, s.batch,
                              s.tokens, s.heads, 8, in, dst),
                  POSENC_OK)
            << posenc_last_error();
        const posenc_rope_positions* where = s.tokens == 0 ? &at_end : nullptr;
        EXPECT_EQ(posenc_rope(nullptr, nullptr, cache, where, kBthd, dtype, s.batch, s.tokens,
                              s.heads, 8, in, dst),
                  POSENC_OK)
            << posenc_last_error();
        const int64_t k_heads = s.heads == 0 ? 0 : 1;
        EXPECT_EQ(posenc_rope_qk(nullptr, &config, nullptr, nullptr, kBthd, dtype, s.batch,
                                 s.tokens, s.heads, k_heads, 8, in, dst, null ? nullptr : k.data(),
                                 null ? nullptr : k_out.data()),
                  POSENC_OK)
            << posenc_last_error();
      }
    }
  }
  // In place; ids of no tokens may be NULL (offset 0) or real.
  EXPECT_EQ(posenc_rope(nullptr, &config, nullptr, nullptr, kBthd, POSENC_F32, 0, 5, 3, 8, x.data(),
                        x.data()),
            POSENC_OK);
  const int64_t ids[2] = {9, 9};  // never read: no tokens
  const posenc_rope_positions by_ids{0, ids, POSENC_ROPE_POSITIONS_INT64};
  EXPECT_EQ(posenc_rope(nullptr, nullptr, cache, &by_ids, kBthd, POSENC_F32, 2, 0, 3, 8, nullptr,
                        nullptr),
            POSENC_OK);

  auto rope = [&](const posenc_rope_config* c, const posenc_rope_cache* ca,
                  const posenc_rope_positions* p, posenc_rope_layout layout, posenc_dtype dtype,
                  int64_t batch, int64_t head_dim, const void* in) {
    return posenc_rope(nullptr, c, ca, p, layout, dtype, batch, 5, 3, head_dim, in, nullptr);
  };
  EXPECT_TRUE(fails_with(rope(nullptr, nullptr, nullptr, kBthd, POSENC_F32, 0, 8, nullptr),
                         POSENC_ERROR_NULL_POINTER, "config"));
  EXPECT_TRUE(
      fails_with(rope(&config, nullptr, nullptr, posenc_rope_layout(3), POSENC_F32, 0, 8, nullptr),
                 kInvalid, "layout"));
  EXPECT_TRUE(fails_with(rope(&config, nullptr, nullptr, kBthd, posenc_dtype(7), 0, 8, nullptr),
                         kInvalid, "dtype"));
  EXPECT_TRUE(fails_with(rope(&config, nullptr, nullptr, kBthd, POSENC_F32, 0, 6, nullptr),
                         kInvalid, "rotary_dim"));
  EXPECT_TRUE(fails_with(rope(&config, nullptr, nullptr, kBthd, POSENC_F32, 0, 0, nullptr),
                         kInvalid, "head_dim must be >= 1"));
  posenc_rope_config odd = config;
  odd.rotary_dim = 7;
  EXPECT_TRUE(fails_with(rope(&odd, nullptr, nullptr, kBthd, POSENC_F32, 0, 8, nullptr), kInvalid,
                         "rotary_dim"));
  const posenc_rope_positions past{9, nullptr, POSENC_ROPE_POSITIONS_INT64};
  EXPECT_TRUE(fails_with(rope(nullptr, cache, &past, kBthd, POSENC_F32, 0, 8, nullptr), kInvalid,
                         "positions"));
  EXPECT_TRUE(fails_with(
      rope(&config, nullptr, nullptr, kBthd, POSENC_F32, 0, 8, offset_bytes(x.data(), 2)), kInvalid,
      "x"));
  EXPECT_TRUE(fails_with(rope(&config, nullptr, nullptr, kBthd, POSENC_F32, -1, 8, nullptr),
                         kInvalid, "batch must be >= 0 (got -1)"));
  const posenc_rope_positions misaligned{0, offset_bytes(ids, 4), POSENC_ROPE_POSITIONS_INT64};
  EXPECT_TRUE(fails_with(posenc_rope(nullptr, &config, nullptr, &misaligned, kBthd, POSENC_F32, 0,
                                     2, 3, 8, nullptr, nullptr),
                         kInvalid, "positions.ids"));
  EXPECT_TRUE(fails_with(posenc_rope_qk(nullptr, &config, nullptr, nullptr, kBthd, POSENC_F32, 0, 5,
                                        4, -1, 8, nullptr, nullptr, nullptr, nullptr),
                         kInvalid, "k_heads must be >= 0 (got -1)"));
  posenc_rope_cache_destroy(cache);
  EXPECT_TRUE(out.guards_intact() && k_out.guards_intact());
  EXPECT_TRUE(out.payload_untouched() && k_out.payload_untouched());
  EXPECT_TRUE(x.payload_untouched() && k.payload_untouched());
}

// rope_qk with q or k of no heads rotates the other one as posenc_rope does.
TEST(RopeEmptyCalls, QkWithOneSideEmptyRotatesTheOther) {
  posenc_rope_config config;
  ASSERT_EQ(posenc_rope_config_init(&config, 8), POSENC_OK);
  const std::vector<float> in = random_floats(2 * 5 * 3 * 8, 7);
  std::vector<float> want(in.size()), got(in.size(), 9.0f);
  ASSERT_EQ(posenc_rope(nullptr, &config, nullptr, nullptr, POSENC_ROPE_BTHD, POSENC_F32, 2, 5, 3,
                        8, in.data(), want.data()),
            POSENC_OK);
  ASSERT_EQ(posenc_rope_qk(nullptr, &config, nullptr, nullptr, POSENC_ROPE_BTHD, POSENC_F32, 2, 5,
                           0, 3, 8, nullptr, nullptr, in.data(), got.data()),
            POSENC_OK);
  EXPECT_EQ(got, want);
  std::fill(got.begin(), got.end(), 9.0f);
  ASSERT_EQ(posenc_rope_qk(nullptr, &config, nullptr, nullptr, POSENC_ROPE_BTHD, POSENC_F32, 2, 5,
                           3, 0, 8, in.data(), got.data(), nullptr, nullptr),
            POSENC_OK);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace posenc::test
