// The fused attention's softmax and bias kernels on every ISA path, against
// double loops: the exponential's accuracy over its whole domain, its
// special values, the bf16 rounding of probabilities (NaN payloads
// included), and the row maxima the bias kernels return.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "runtime/kernel_registry.hpp"

namespace posenc::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kSizes[] = {1, 5, 16, 17, 31, 64, 257, 1030};
// Probabilities and online-softmax corrections below 2^-64 are 0 (they
// would bring subnormals into the GEMMs; docs/design.md).
constexpr double kMinProbability = 0x1p-64;
// Where a probability of `want` lies at the flush edge: within the exp's
// error of 2^-64, it may be kept or flushed.
bool at_flush_edge(double want) { return std::abs(want / kMinProbability - 1.0) < 1e-3; }

using SoftmaxBlock = decltype(posenc::AttentionKernels::softmax_block);

class AttentionKernels : public IsaTest {
 protected:
  const posenc::AttentionKernels& softmax() const { return kernels().attention; }
  // The path's softmax steps: the portable one, and the one with AVX512-BF16
  // rounding where the path has it and the CPU can run it.
  std::vector<SoftmaxBlock> softmax_steps() const {
    std::vector<SoftmaxBlock> steps = {softmax().softmax_block};
    const SoftmaxBlock for_cpu = kernel_table_for_cpu(GetParam())->attention.softmax_block;
    if (for_cpu != steps.front()) steps.push_back(for_cpu);
    return steps;
  }
  const posenc::AttentionBiasKernels& bias() const { return kernels().attention_bias; }
};

// Arguments of exp spread over [-90, 0]: below ln 2^-64 (about -44.36)
// flushed, the rest computed.
std::vector<float> exp_arguments(int64_t n, uint32_t seed) {
  std::vector<float> x = random_floats(size_t(n), seed, -90.0f, 0.0f);
  for (size_t i = 0; i < x.size(); i += 3) x[i] *= 0.01f;  // many near 0
  return x;
}

// One first block of a row: block_max 0 makes the probabilities exp(x).
float first_block(SoftmaxBlock step, float* x, int64_t valid, int64_t n, uint16_t* probs_bf16,
                  float* row_sum, const posenc::PrefetchRows& next = {}) {
  float row_max = -kInf;
  *row_sum = 0.0f;
  return step(x, valid, n, 0.0f, 1.0f, &row_max, row_sum, probs_bf16, next);
}

// Rows a softmax step is told come next, a score row and a bf16 mask row
// of the `keys` it reads (live_*), and copies to check that it left them
// as they were. (Whether it prefetched them cannot be seen here.)
struct NextRowsOf {
  explicit NextRowsOf(int64_t keys, uint32_t seed)
      : scores(exp_arguments(keys, seed)),
        mask(to_bf16(scores)),
        live_scores(scores),
        live_mask(mask) {}
  posenc::PrefetchRows rows() {
    posenc::PrefetchRows next;
    next.rows[0] = {live_scores.data(), int64_t(sizeof(float))};
    next.rows[1] = {live_mask.data(), int64_t(sizeof(uint16_t))};
    return next;
  }
  bool unchanged() const { return live_scores == scores && live_mask == mask; }

  const std::vector<float> scores;
  const std::vector<uint16_t> mask;
  std::vector<float> live_scores;
  std::vector<uint16_t> live_mask;
};

TEST_P(AttentionKernels, ExpIsAccurateOverItsDomain) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    const std::vector<float> x = exp_arguments(n, uint32_t(n));
    std::vector<float> got = x;
    got.push_back(7.0f);  // guard
    NextRowsOf next(n, uint32_t(n + 1));
    float sum = 0.0f;
    first_block(softmax().softmax_block, got.data(), n, n, nullptr, &sum, next.rows());
    ASSERT_EQ(got[size_t(n)], 7.0f);
    ASSERT_TRUE(next.unchanged());
    std::vector<float> without_next = x;
    float sum_without_next = 0.0f;
    first_block(softmax().softmax_block, without_next.data(), n, n, nullptr, &sum_without_next);
    ASSERT_EQ(without_next, std::vector<float>(got.begin(), got.end() - 1));
    ASSERT_EQ(sum_without_next, sum);
    double want_sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double want = std::exp(double(x[size_t(j)]));
      want_sum += want;
      if (want < kMinProbability && !at_flush_edge(want)) {
        ASSERT_EQ(got[size_t(j)], 0.0f) << "x = " << x[size_t(j)];
      } else if (at_flush_edge(want)) {
        ASSERT_GE(got[size_t(j)], 0.0f) << "x = " << x[size_t(j)];
        ASSERT_LE(got[size_t(j)], 1.001 * kMinProbability) << "x = " << x[size_t(j)];
      } else {
        ASSERT_NEAR(got[size_t(j)], want, 3e-7 * want) << "x = " << x[size_t(j)];
      }
    }
    EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum + 1e-30);
  }
}

TEST_P(AttentionKernels, ExpSpecialValues) {
  const float denormal = float_from_bits(0x00000001u);
  std::vector<float> x = {0.0f,         -0.0f,   -kInf,     -44.3f,
                          -44.4f,       -100.0f, -denormal, -std::numeric_limits<float>::max(),
                          std::nanf("")};
  float sum = 0.0f;
  first_block(softmax().softmax_block, x.data(), int64_t(x.size()), int64_t(x.size()), nullptr,
              &sum);
  EXPECT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[1], 1.0f);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_NEAR(x[3], std::exp(double(-44.3f)), 3e-7 * std::exp(double(-44.3f)));
  EXPECT_EQ(x[4], 0.0f);  // below 2^-64: flushed
  EXPECT_EQ(x[5], 0.0f);
  EXPECT_EQ(x[6], 1.0f);
  EXPECT_EQ(x[7], 0.0f);
  EXPECT_TRUE(std::isnan(x[8]));
  EXPECT_TRUE(std::isnan(sum));
}

// The same special values where the probabilities are bf16: the exp goes
// through 2^t there and flushes below 2^-64 (x below about -44.36).
TEST_P(AttentionKernels, Bf16ExpSpecialValues) {
  for (SoftmaxBlock step : softmax_steps()) {
    const float denormal = float_from_bits(0x00000001u);
    std::vector<float> x = {0.0f,   -0.0f,   -kInf,     -44.3f,
                            -44.4f, -100.0f, -denormal, -std::numeric_limits<float>::max()};
    const std::vector<float> in = x;
    std::vector<uint16_t> probs(x.size());
    float sum = 0.0f;
    first_block(step, x.data(), int64_t(x.size()), int64_t(x.size()), probs.data(), &sum);
    std::vector<float> got;
    for (uint16_t p : probs) got.push_back(posenc_bf16_to_f32(p));
    EXPECT_EQ(got[0], 1.0f);
    EXPECT_EQ(got[1], 1.0f);
    EXPECT_EQ(got[2], 0.0f);
    EXPECT_NEAR(got[3], std::exp(double(in[3])), 0.01 * std::exp(double(in[3])));  // 2^-63.9
    EXPECT_EQ(got[4], 0.0f);  // below 2^-64: flushed
    EXPECT_EQ(got[5], 0.0f);
    EXPECT_EQ(got[6], 1.0f);
    EXPECT_EQ(got[7], 0.0f);
    EXPECT_NEAR(sum, 3.0, 1e-3);  // three exponentials of 1 (to 1.2e-4) and tiny ones
  }
}

// bf16 probabilities are exp rounded to nearest even: within half a bf16 ulp
// of the double value, plus exp's own error where that sits on a tie.
TEST_P(AttentionKernels, Bf16ProbabilitiesRoundToNearest) {
  for (SoftmaxBlock step : softmax_steps()) {
    for (int64_t n : kSizes) {
      for (int64_t valid : {int64_t(0), n / 2, n}) {
        SCOPED_TRACE(testing::Message()
                     << "n " << n << " valid " << valid << " step "
                     << (step == softmax().softmax_block ? "portable" : "avx512_bf16"));
        std::vector<float> x = exp_arguments(n, uint32_t(3 * n));
        const std::vector<float> in = x;
        std::vector<uint16_t> probs(size_t(n) + 1, 0xBEEF);
        NextRowsOf next(valid, uint32_t(3 * n + 1));
        float sum = 0.0f;
        first_block(step, x.data(), valid, n, probs.data(), &sum, next.rows());
        ASSERT_EQ(probs[size_t(n)], 0xBEEF);
        ASSERT_TRUE(next.unchanged());
        std::vector<uint16_t> without_next(size_t(n) + 1, 0xBEEF);
        float sum_without_next = 0.0f;
        first_block(step, x.data(), valid, n, without_next.data(), &sum_without_next);
        ASSERT_EQ(without_next, probs);
        ASSERT_EQ(sum_without_next, sum);
        double want_sum = 0.0;  // of the fp32 exponentials, not the rounded ones
        for (int64_t j = 0; j < valid; ++j) want_sum += std::exp(double(in[size_t(j)]));
        EXPECT_NEAR(sum, want_sum, 2e-4 * want_sum + 1e-37);
        for (int64_t j = 0; j < n; ++j) {
          const float got = posenc_bf16_to_f32(probs[size_t(j)]);
          if (j >= valid) {
            ASSERT_EQ(probs[size_t(j)], 0) << "masked key " << j;
            continue;
          }
          // Half a bf16 ulp (8 significant bits) at want, plus exp's error.
          const double want = std::exp(double(in[size_t(j)]));
          if (want < kMinProbability || at_flush_edge(want)) {
            ASSERT_TRUE(got == 0.0f || at_flush_edge(want)) << "x = " << in[size_t(j)];
            ASSERT_LE(got, 1.01 * kMinProbability) << "x = " << in[size_t(j)];
            continue;
          }
          const double half_ulp = std::ldexp(1.0, std::ilogb(want) - 8);
          ASSERT_NEAR(got, want, half_ulp + 2e-4 * want) << "x = " << in[size_t(j)];
        }
      }
    }
  }
}

// A NaN score makes its row's probabilities go through the NaN-safe
// rounding: a NaN whose payload would carry into the sign stays a NaN.
TEST_P(AttentionKernels, Bf16ProbabilitiesKeepNaN) {
  for (SoftmaxBlock step : softmax_steps()) {
    for (int64_t n : kSizes) {
      for (uint32_t nan_bits : {0x7FC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F800001u}) {
        SCOPED_TRACE(testing::Message() << "n " << n << " NaN bits " << std::hex << nan_bits);
        std::vector<float> x = exp_arguments(n, 5);
        x[size_t(n - 1)] = float_from_bits(nan_bits);
        std::vector<uint16_t> probs(static_cast<size_t>(n));
        float sum = 0.0f;
        first_block(step, x.data(), n, n, probs.data(), &sum);
        EXPECT_TRUE(std::isnan(sum));
        EXPECT_TRUE(std::isnan(posenc_bf16_to_f32(probs[size_t(n - 1)])));
      }
    }
  }
}

// Both steps give the same bf16 probabilities bit for bit (the exp computes
// no subnormal, which the AVX512-BF16 instruction would flush): over exp's
// whole domain, and densely around its flush edge 2^-64 (x near -44.36).
TEST_P(AttentionKernels, Bf16StepsAgree) {
  const std::vector<SoftmaxBlock> steps = softmax_steps();
  if (steps.size() < 2) GTEST_SKIP() << "no AVX512-BF16 step on this path or CPU";
  for (int64_t n : kSizes) {
    std::vector<float> x = exp_arguments(n, 17);
    for (size_t i = 1; i < x.size(); i += 2) x[i] = -44.2f - 0.3f * float(i) / float(n);
    std::vector<uint16_t> portable(static_cast<size_t>(n)), native(static_cast<size_t>(n));
    std::vector<float> scratch = x;
    float sum_portable = 0.0f, sum_native = 0.0f;
    first_block(steps[0], scratch.data(), n, n, portable.data(), &sum_portable);
    scratch = x;
    first_block(steps[1], scratch.data(), n, n, native.data(), &sum_native);
    EXPECT_EQ(portable, native) << "n " << n;
    EXPECT_EQ(sum_portable, sum_native) << "n " << n;
  }
}

// The store's scaling to bf16 against the scalar rounding, bit for bit:
// ties, NaN payloads, infinities, subnormals and products near 2^-126 and
// FLT_MAX, each special value in whole batches and as the last element of
// every tail length, scaled by 1 and by 0.5 (x = special / factor exactly).
TEST_P(AttentionKernels, ScaleToBf16RoundsAsTheScalarFunction) {
  const uint32_t specials[] = {0x3F808000u, 0x3F818000u, 0x7FC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu,
                               0x7F800001u, 0x7F800000u, 0xFF800000u, 0x00800000u, 0x00AAAAAAu,
                               0x00000001u, 0x80400000u, 0x00FFFFFFu, 0x7F7FFFFFu, 0x0u};
  constexpr size_t kSpecials = std::size(specials);
  std::vector<int64_t> sizes(std::begin(kSizes), std::end(kSizes));
  for (int64_t n = 2; n <= 33; ++n) sizes.push_back(n);
  for (const float factor : {1.0f, 0.5f}) {
    for (int64_t n : sizes) {
      for (size_t turn = 0; turn < kSpecials; ++turn) {
        SCOPED_TRACE(testing::Message() << "factor " << factor << " n " << n << " turn " << turn);
        auto special_x = [&](size_t which) {
          const float special = float_from_bits(specials[which % kSpecials]);
          return std::isnan(special) ? special : special / factor;
        };
        std::vector<float> x = random_floats(size_t(n), uint32_t(n + 100 * turn), -4.0f, 4.0f);
        // Every third a special value, and the last one: turn by turn each
        // special is the tail's last element.
        for (size_t i = 0; i < x.size(); i += 3) x[i] = special_x(i / 3 + turn);
        x[size_t(n - 1)] = special_x(turn);
        std::vector<uint16_t> out(size_t(n) + 1, 0xBEEF);
        softmax().scale_to_bf16(x.data(), factor, out.data(), n);
        ASSERT_EQ(out[size_t(n)], 0xBEEF);
        for (int64_t j = 0; j < n; ++j) {
          const float product = x[size_t(j)] * factor;
          uint32_t bits;
          std::memcpy(&bits, &product, sizeof bits);
          ASSERT_EQ(out[size_t(j)], posenc_f32_to_bf16(product))
              << "j " << j << ", x = " << x[size_t(j)] << ", product bits " << std::hex << bits;
        }
      }
    }
  }
}

// The online softmax with scale 0.5: a second block with a larger maximum
// rescales the first block's sum by exp(0.5 (old - new)) and returns that
// factor; the probabilities are exp(0.5 (x - max)).
TEST_P(AttentionKernels, OnlineSoftmaxCorrection) {
  std::vector<float> first = {0.5f, -1.0f, 0.25f}, second = {2.0f, 1.0f};
  float row_max = -kInf, row_sum = 0.0f;
  EXPECT_EQ(
      softmax().softmax_block(first.data(), 3, 3, 0.5f, 0.5f, &row_max, &row_sum, nullptr, {}),
      0.0f);
  EXPECT_NEAR(first[1], std::exp(0.5 * (-1.0 - 0.5)), 1e-7);
  const float correction =
      softmax().softmax_block(second.data(), 2, 2, 2.0f, 0.5f, &row_max, &row_sum, nullptr, {});
  EXPECT_NEAR(correction, std::exp(0.5 * (0.5 - 2.0)), 1e-7);
  EXPECT_NEAR(second[1], std::exp(0.5 * (1.0 - 2.0)), 1e-7);
  double want = 0.0;
  for (double x : {0.5, -1.0, 0.25, 2.0, 1.0}) want += std::exp(0.5 * (x - 2.0));
  EXPECT_NEAR(row_sum, want, 1e-6);
  EXPECT_EQ(row_max, 2.0f);
}

// A maximum that grows by more than ln 2^-64 / scale gives the earlier
// blocks a weight of 0 (their accumulator is zeroed, not made subnormal);
// by a little less, their weight exp(scale (old - new)).
TEST_P(AttentionKernels, OnlineSoftmaxFlushesTinyCorrections) {
  for (SoftmaxBlock step : softmax_steps()) {
    for (float jump : {88.6f, 88.8f, 200.0f}) {  // times scale 0.5: 44.3, 44.4, 100
      SCOPED_TRACE(testing::Message() << "jump " << jump);
      std::vector<float> first = {0.0f, -1.0f}, second = {jump};
      float row_max = -kInf, row_sum = 0.0f;
      step(first.data(), 2, 2, 0.0f, 0.5f, &row_max, &row_sum, nullptr, {});
      const float sum_first = row_sum;
      const float correction =
          step(second.data(), 1, 1, jump, 0.5f, &row_max, &row_sum, nullptr, {});
      const double want = std::exp(-0.5 * double(jump));
      if (want < kMinProbability) {
        EXPECT_EQ(correction, 0.0f);
        EXPECT_EQ(row_sum, 1.0f);
      } else {
        EXPECT_NEAR(correction, want, 1e-6 * want);
        EXPECT_NEAR(row_sum, 1.0 + want * sum_first, 1e-7);
      }
    }
  }
}

// A block whose visible scores are all -inf (an additive mask can make
// one anywhere in a row): before any finite block its probabilities are 0
// and the sum stays 0, nothing NaN; the first finite block then discards
// what came before (correction 0); after it, a masked block changes
// nothing (correction 1).
TEST_P(AttentionKernels, FullyMaskedBlocksInTheOnlineSoftmax) {
  for (SoftmaxBlock step : softmax_steps()) {
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE(testing::Message() << "bf16 " << bf16);
      std::vector<uint16_t> probs(4, 0x7FC0);
      const auto prob = [&](const std::vector<float>& x, size_t j) {
        return bf16 ? double(from_bf16({probs[j]})[0]) : double(x[j]);
      };
      float row_max = -kInf, row_sum = 0.0f;
      std::vector<float> masked = {-kInf, -kInf, -kInf, 5.0f};  // key 3 not visible
      EXPECT_EQ(step(masked.data(), 3, 4, -kInf, 0.5f, &row_max, &row_sum,
                     bf16 ? probs.data() : nullptr, {}),
                1.0f);
      for (size_t j = 0; j < 4; ++j) EXPECT_EQ(prob(masked, j), 0.0) << j;
      EXPECT_EQ(row_sum, 0.0f);
      EXPECT_EQ(row_max, -kInf);
      std::vector<float> finite = {1.0f, 2.0f, -kInf};
      EXPECT_EQ(step(finite.data(), 3, 3, 2.0f, 0.5f, &row_max, &row_sum,
                     bf16 ? probs.data() : nullptr, {}),
                0.0f);
      const double tol = bf16 ? 4e-3 : 1e-7;
      EXPECT_NEAR(prob(finite, 0), std::exp(0.5 * (1.0 - 2.0)), tol);
      EXPECT_NEAR(prob(finite, 1), 1.0, tol);
      EXPECT_EQ(prob(finite, 2), 0.0);
      EXPECT_NEAR(row_sum, 1.0 + std::exp(-0.5), 1e-4);
      const float sum_before = row_sum;
      masked = {-kInf, -kInf, -kInf, -kInf};
      EXPECT_EQ(step(masked.data(), 4, 4, -kInf, 0.5f, &row_max, &row_sum,
                     bf16 ? probs.data() : nullptr, {}),
                1.0f);
      for (size_t j = 0; j < 4; ++j) EXPECT_EQ(prob(masked, j), 0.0) << j;
      EXPECT_EQ(row_sum, sum_before);
      EXPECT_EQ(row_max, 2.0f);
    }
  }
}

double max_of(const std::vector<float>& x, int64_t n) {
  double m = -double(kInf);
  for (int64_t j = 0; j < n; ++j) m = std::max(m, double(x[size_t(j)]));
  return m;
}

// gather_add's clamp at every place a row can meet it: windows narrower
// than a batch (both ends inside one) to wider than two, rows of up to 3
// batches with every tail and one longer, each shift that puts the
// window's ends before, inside (at every lane of a batch) or past the row,
// and shifts of 2^40 either way. The window is exactly its values (a read
// past them is the sanitizers'), its ends +inf in a second pass (lanes past
// a row's end that took them would give NaN). Gates of 1, 0.5 and -2
// (exact products). The sums (one addition each) and the maximum exact,
// nothing written around the row.
TEST_P(AttentionKernels, GatherAddClampsAtEveryColumn) {
  const int64_t far = int64_t(1) << 40;
  for (const float gate : {1.0f, 0.5f, -2.0f}) {
    for (int64_t width : {1, 2, 3, 6, 14, 16, 40}) {
      std::vector<float> window = random_floats(size_t(width), 21, -4.0f, 4.0f);
      const int64_t lo = 0, hi = width - 1;
      for (const bool infinite_ends : {false, true}) {
        if (infinite_ends) window.front() = window.back() = kInf;
        for (int64_t n : {0, 1, 2, 7, 16, 17, 30, 33, 48, 100}) {
          const std::vector<float> scores = random_floats(size_t(n) + 2, 22, -3.0f, 3.0f);
          std::vector<int64_t> shifts = {-far, far};
          for (int64_t shift = lo - n - 2; shift <= hi + 2; ++shift) shifts.push_back(shift);
          for (const int64_t shift : shifts) {
            SCOPED_TRACE(testing::Message() << "gate " << gate << " width " << width << " n " << n
                                            << " shift " << shift
                                            << (infinite_ends ? ", infinite ends" : ""));
            std::vector<float> got = scores, want = scores;
            float want_max = -kInf;
            for (int64_t j = 0; j < n; ++j) {
              want[size_t(j + 1)] += gate * window[size_t(std::clamp(j + shift, lo, hi))];
              want_max = std::max(want_max, want[size_t(j + 1)]);
            }
            const float got_max =
                bias().gather_add(window.data(), shift, lo, hi, gate, got.data() + 1, n);
            ASSERT_EQ(got, want);
            ASSERT_EQ(got_max, want_max);
          }
        }
      }
    }
  }
}

// An infinite gate: each column inf times its value (positive here: +inf
// for a gate of +inf, -inf for -inf), and the maximum of the row's columns
// alone (the lanes past a tail, 0 x inf, are NaN), at every tail length; a
// NaN gate gives NaN columns.
TEST_P(AttentionKernels, GatherAddTakesAGateOfInfOrNaN) {
  const std::vector<float> window = random_floats(40, 23, 0.5f, 4.0f);
  for (int64_t n = 1; n <= 40; ++n) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    for (const float gate : {kInf, -kInf}) {
      std::vector<float> scores(size_t(n), -1.0f);
      EXPECT_EQ(bias().gather_add(window.data(), 0, 0, 39, gate, scores.data(), n), gate);
      for (const float s : scores) ASSERT_EQ(s, gate);
    }
    std::vector<float> scores(size_t(n), -1.0f);
    bias().gather_add(window.data(), 0, 0, 39, std::nanf(""), scores.data(), n);
    for (const float s : scores) ASSERT_TRUE(std::isnan(s));
  }
}

TEST_P(AttentionKernels, BiasKernelsReturnTheRowMaximum) {
  const std::vector<float> window = random_floats(2100, 11, -4.0f, 4.0f);
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(5), int64_t(17), int64_t(257), int64_t(1030)}) {
    for (int64_t shift : {int64_t(-40), int64_t(0), int64_t(3), int64_t(900)}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " shift " << shift);
      const int64_t lo = 0, hi = 1000;
      std::vector<float> scores = random_floats(size_t(n) + 1, 12), want = scores;
      scores[size_t(n)] = want[size_t(n)] = 7.0f;
      for (int64_t j = 0; j < n; ++j) {
        want[size_t(j)] += window[size_t(std::clamp(j + shift, lo, hi))];
      }
      const float got_max =
          bias().gather_add(window.data(), shift, lo, hi, 1.0f, scores.data(), n);
      ASSERT_EQ(scores[size_t(n)], 7.0f);
      for (int64_t j = 0; j < n; ++j) ASSERT_NEAR(scores[size_t(j)], want[size_t(j)], 1e-6);
      ASSERT_EQ(double(got_max), max_of(scores, n));
      ASSERT_EQ(double(bias().max_of(scores.data(), n)), max_of(scores, n));
    }
  }
  // Map rows below 50, columns below the widest map (64).
  const std::vector<float> rows = random_floats(50, 13), cols = random_floats(64, 14);
  for (int64_t width : {1, 7, 8, 14, 16, 17, 40, 64}) {  // below, at and above a batch
    for (int64_t first_key : {0, 3, 30}) {
      // From key 0, 224 keys span 16 map rows of 14 (AVX-512 permutes them)
      // and 225 span 17 (its narrow path); from key 3, 221 and 222.
      for (int64_t n : {0, 1, 13, 100, 221, 222, 224, 225, 257}) {
        if ((first_key + n) > 50 * width) continue;
        SCOPED_TRACE(testing::Message()
                     << "width " << width << " first " << first_key << " n " << n);
        std::vector<float> scores = random_floats(size_t(n) + 1, 15), want = scores;
        scores[size_t(n)] = 7.0f;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t key = first_key + j;
          want[size_t(j)] += rows[size_t(key / width)] + cols[size_t(key % width)];
        }
        const float got_max =
            bias().add_2d(rows.data(), cols.data(), width, first_key, scores.data(), n);
        ASSERT_EQ(scores[size_t(n)], 7.0f);
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(scores[size_t(j)], want[size_t(j)]) << j;
        ASSERT_EQ(double(got_max), max_of(scores, n));
      }
    }
  }
}

// The mask kernels: scores[j] + alpha * mask[j] (fp32, and bf16 widened)
// as one fused multiply-add (or a product and a sum where the ISA has no
// FMA: within one rounding of it), -inf entries, tails, the row maximum;
// with a bias row, bit for bit the same kernel on scores[j] + bias[j].
TEST_P(AttentionKernels, MaskKernelsAddAndReturnTheRowMaximum) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(16), int64_t(17), int64_t(31),
                    int64_t(257), int64_t(1030)}) {
    for (float alpha : {1.0f, 0.125f, 7.3f}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " alpha " << alpha);
      std::vector<float> mask = random_floats(size_t(n), 16, -5.0f, 5.0f);
      for (size_t j = 2; j < mask.size(); j += 5) mask[j] = -kInf;
      const std::vector<uint16_t> mask_bf16 = to_bf16(mask);
      const std::vector<float> widened = from_bf16(mask_bf16);
      const std::vector<float> scores = random_floats(size_t(n) + 1, 17, -3.0f, 3.0f);
      const std::vector<float> position = random_floats(size_t(n), 18, -2.0f, 2.0f);
      std::vector<float> scores_plus_position = scores;
      for (int64_t j = 0; j < n; ++j) scores_plus_position[size_t(j)] += position[size_t(j)];
      for (bool bf16 : {false, true}) {
        const auto add = [&](const float* bias_row, std::vector<float>& row) {
          row[size_t(n)] = 7.0f;  // guard
          const float row_max =
              bf16 ? bias().add_mask_bf16(mask_bf16.data(), alpha, bias_row, row.data(), n)
                   : bias().add_mask_f32(mask.data(), alpha, bias_row, row.data(), n);
          EXPECT_EQ(row[size_t(n)], 7.0f);
          return row_max;
        };
        std::vector<float> got = scores;
        const float got_max = add(nullptr, got);
        for (int64_t j = 0; j < n; ++j) {
          const double m = bf16 ? widened[size_t(j)] : mask[size_t(j)];
          const double want = double(scores[size_t(j)]) + double(alpha) * m;
          if (std::isinf(m)) {
            ASSERT_EQ(got[size_t(j)], -kInf) << j;
          } else {
            ASSERT_NEAR(got[size_t(j)], want, 2.5e-7 * (std::abs(want) + std::abs(alpha * m)))
                << j;
          }
        }
        ASSERT_EQ(double(got_max), max_of(got, n));
        std::vector<float> with_bias = scores, summed_first = scores_plus_position;
        const float with_bias_max = add(position.data(), with_bias);
        const float summed_first_max = add(nullptr, summed_first);
        ASSERT_EQ(with_bias_max, summed_first_max);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(with_bias[size_t(j)], summed_first[size_t(j)]) << j;
        }
      }
    }
  }
}

// The soft cap: outer tanh(inner x) against the double definition, within
// a few fp32 ulp of the cap; saturation at +-outer far out, tails, the row
// maximum, nothing written past n.
TEST_P(AttentionKernels, SoftcapIsTanhScaled) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(16), int64_t(17), int64_t(31),
                    int64_t(257), int64_t(1030)}) {
    // Gemma 2's cap of 50 at scale 1 and at scale 0.125 (scores in q.k's
    // units), and a cap of 1.
    for (auto [inner, outer] : {std::pair{0.02f, 50.0f}, {0.0025f, 400.0f}, {1.0f, 1.0f}}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " inner " << inner);
      std::vector<float> scores = random_floats(size_t(n) + 1, 19, -3.0f / inner, 3.0f / inner);
      for (size_t j = 3; j < size_t(n); j += 7) scores[j] *= 0.001f;  // near 0
      if (n > 5) scores[5] = 1e30f;
      if (n > 6) scores[6] = -1e30f;
      const std::vector<float> given = scores;
      scores[size_t(n)] = 7.0f;  // guard
      const float got_max = bias().softcap(scores.data(), n, inner, outer);
      EXPECT_EQ(scores[size_t(n)], 7.0f);
      for (int64_t j = 0; j < n; ++j) {
        const double want = double(outer) * std::tanh(double(inner) * double(given[size_t(j)]));
        ASSERT_NEAR(scores[size_t(j)], want, 4e-7 * double(outer)) << j << " " << given[size_t(j)];
      }
      if (n > 6) {
        EXPECT_EQ(scores[5], outer);
        EXPECT_EQ(scores[6], -outer);
      }
      ASSERT_EQ(double(got_max), max_of(scores, n));
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionKernels);

}  // namespace
}  // namespace posenc::test
