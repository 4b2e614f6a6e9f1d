// Absolute encodings on every ISA path against the double reference loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "reference/absolute.hpp"

namespace posenc::test {
namespace {

namespace ref = posenc::reference;

// Reduced angles keep fp32 sin/cos within a few ulp of 1 for any position.
constexpr double kSinusoidAtol = 2e-6;
constexpr double kBf16Rtol = 1.0 / 256;  // rounding to bf16: up to 2^-8 relative

const posenc_sincos_layout kLayouts[] = {POSENC_SINCOS_INTERLEAVED, POSENC_SINCOS_SPLIT};

class SinusoidTable : public IsaTest {};

TEST_P(SinusoidTable, MatchesReferenceF32) {
  for (int64_t dim : {1, 2, 3, 7, 8, 64, 65, 127, 130}) {
    for (int64_t length : {1, 5, 67}) {
      for (int64_t start : {0, 99990, 500000}) {
        for (auto layout : kLayouts) {
          SCOPED_TRACE(testing::Message() << "dim " << dim << " length " << length << " start "
                                          << start << " layout " << layout);
          GuardedFloats out(size_t(length * dim));
          ASSERT_EQ(posenc_sinusoid_table(context(), length, dim, start, 10000.0, layout,
                                          POSENC_F32, out.data()),
                    POSENC_OK)
              << posenc_last_error();
          EXPECT_TRUE(all_close(out.data(),
                                ref::sinusoid_table(length, dim, start, 10000.0, layout),
                                kSinusoidAtol, 0.0));
          EXPECT_TRUE(out.guards_intact());
        }
      }
    }
  }
}

TEST_P(SinusoidTable, MatchesReferenceBf16) {
  for (int64_t dim : {1, 9, 64}) {
    const int64_t length = 33;
    std::vector<uint16_t> out(size_t(length * dim));
    ASSERT_EQ(posenc_sinusoid_table(context(), length, dim, 7, 500.0, POSENC_SINCOS_SPLIT,
                                    POSENC_BF16, out.data()),
              POSENC_OK);
    EXPECT_TRUE(all_close_bf16(out.data(),
                               ref::sinusoid_table(length, dim, 7, 500.0, POSENC_SINCOS_SPLIT),
                               1e-6, kBf16Rtol));
  }
}

// Bases at both ends of the range taken (below 1, frequencies rise to
// 2^64), at the last positions taken: every value in [-1, 1].
TEST_P(SinusoidTable, ExtremeBasesAndPositionsStayInRange) {
  const int64_t length = 3, dim = 130;
  for (double base : {0x1p-64, 1e-10, 0.5, 1e300}) {
    for (int64_t start : {int64_t(0), int64_t(1) << 40, (int64_t(1) << 53) - length}) {
      GuardedFloats out(size_t(length * dim));
      ASSERT_EQ(posenc_sinusoid_table(context(), length, dim, start, base,
                                      POSENC_SINCOS_INTERLEAVED, POSENC_F32, out.data()),
                POSENC_OK)
          << posenc_last_error();
      for (int64_t i = 0; i < length * dim; ++i) {
        ASSERT_TRUE(out.data()[i] >= -1.0f && out.data()[i] <= 1.0f)
            << "base " << base << " start " << start << ": " << i << " = " << out.data()[i];
      }
    }
  }
}

// The row kernel at the largest angles the API lets through (RoPE's
// frequencies up to 2^128 at positions below 2^53): every sin and cos
// finite, in [-1, 1], with sin^2 + cos^2 = 1 (the rounded reduction left
// angles of 2^128 and more there, infinite in fp32: NaN).
TEST_P(SinusoidTable, RowKernelAtTheLargestAngles) {
  std::vector<double> freqs;
  for (int i = 0; i < 64; ++i) freqs.push_back(std::ldexp(1.0 + i / 64.0, 127 - i % 3));
  const int64_t pairs = int64_t(freqs.size());
  std::vector<float> row(size_t(2 * pairs));
  for (int64_t position : {int64_t(1), (int64_t(1) << 40) + 3, (int64_t(1) << 53) - 1}) {
    kernels().absolute.sinusoid_row(position, freqs.data(), 2 * pairs, POSENC_SINCOS_SPLIT,
                                    row.data());
    for (int64_t j = 0; j < pairs; ++j) {
      const double s = row[size_t(j)], c = row[size_t(pairs + j)];
      ASSERT_NEAR(s * s + c * c, 1.0, 1e-5) << "position " << position << " pair " << j;
    }
  }
}

// The accuracy posenc/absolute.h states, against sin and cos in long double
// (frequencies too) at random positions: 2.5e-7 below 2^28, 5e-7 below
// 2^30 (the highest frequencies, of the largest angles, err the most).
TEST_P(SinusoidTable, StatedAccuracyAtLargePositions) {
  if (std::numeric_limits<long double>::digits < 64) {
    GTEST_SKIP() << "long double is no wider than double here";
  }
  const int64_t dim = 64;
  std::vector<long double> frequencies(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    frequencies[size_t(i)] = std::pow(10000.0L, -2.0L * i / dim);
  }
  std::mt19937_64 random(7);
  std::vector<float> row(static_cast<size_t>(dim));
  for (const auto& [bits, bound] : {std::pair{28, 2.5e-7}, std::pair{30, 5e-7}}) {
    for (int i = 0; i < 400; ++i) {
      const int64_t k = int64_t(random() >> (64 - bits));
      ASSERT_EQ(posenc_sinusoid_table(context(), 1, dim, k, 10000.0, POSENC_SINCOS_INTERLEAVED,
                                      POSENC_F32, row.data()),
                POSENC_OK);
      for (int64_t c = 0; c < dim; ++c) {
        const long double angle = k * frequencies[size_t(c / 2)];
        const long double exact = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
        ASSERT_LE(double(std::abs(row[size_t(c)] - exact)), bound)
            << "position " << k << " column " << c;
      }
    }
  }
}

TEST_P(SinusoidTable, LongTable) {
  const int64_t length = 8192, dim = 512;
  std::vector<float> out(size_t(length * dim));
  ASSERT_EQ(posenc_sinusoid_table(context(), length, dim, 0, 10000.0,
                                  POSENC_SINCOS_INTERLEAVED, POSENC_F32, out.data()),
            POSENC_OK);
  EXPECT_TRUE(all_close(out.data(),
                        ref::sinusoid_table(length, dim, 0, 10000.0, POSENC_SINCOS_INTERLEAVED),
                        kSinusoidAtol, 0.0));
}

// The PositionalEncoding module of the PyTorch tutorials (docs/design.md
// section 1): pe[:, 0::2] = sin(k * div), pe[:, 1::2] = cos(k * div),
// div = exp(arange(0, D, 2) * -(ln(10000) / D)).
TEST_P(SinusoidTable, EqualsPytorchTutorialDefinition) {
  const int64_t length = 50, dim = 16;
  std::vector<float> out(size_t(length * dim));
  ASSERT_EQ(posenc_sinusoid_table(context(), length, dim, 0, 10000.0,
                                  POSENC_SINCOS_INTERLEAVED, POSENC_F32, out.data()),
            POSENC_OK);
  for (int64_t k = 0; k < length; ++k) {
    for (int64_t i = 0; i < dim; i += 2) {
      const double div = std::exp(double(i) * -(std::log(10000.0) / double(dim)));
      EXPECT_NEAR(out[size_t(k * dim + i)], std::sin(double(k) * div), kSinusoidAtol);
      EXPECT_NEAR(out[size_t(k * dim + i + 1)], std::cos(double(k) * div), kSinusoidAtol);
    }
  }
}

// tensor2tensor's get_timing_signal_1d (min_timescale 1, max_timescale
// 10000): D/2 timescales spaced by log(10000) / (D/2 - 1), sines then cosines,
// an odd D's last column 0. posenc's SPLIT table of base 10000^(D/(D-2))
// (absolute.h) for an even D.
TEST_P(SinusoidTable, SplitOfAnotherBaseIsTensor2tensors) {
  const int64_t length = 30;
  for (int64_t dim : {4, 10, 64}) {
    const int64_t half = dim / 2;
    std::vector<float> out(size_t(length * dim));
    const double base = std::pow(10000.0, double(dim) / double(dim - 2));
    ASSERT_EQ(posenc_sinusoid_table(context(), length, dim, 0, base, POSENC_SINCOS_SPLIT,
                                    POSENC_F32, out.data()),
              POSENC_OK);
    const double increment = std::log(10000.0) / double(half - 1);
    for (int64_t k = 0; k < length; ++k) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(k) * std::exp(-double(i) * increment);
        EXPECT_NEAR(out[size_t(k * dim + i)], std::sin(angle), kSinusoidAtol) << dim;
        EXPECT_NEAR(out[size_t(k * dim + half + i)], std::cos(angle), kSinusoidAtol) << dim;
      }
    }
  }
}

class SinusoidTable2d : public IsaTest {};

TEST_P(SinusoidTable2d, MatchesReference) {
  const std::tuple<int64_t, int64_t> maps[] = {{1, 1}, {1, 7}, {7, 1}, {7, 5}, {14, 14}, {24, 40}};
  for (auto [height, width] : maps) {
    for (int64_t dim : {2, 6, 64, 258}) {
      for (auto layout : kLayouts) {
        SCOPED_TRACE(testing::Message() << height << "x" << width << " dim " << dim);
        GuardedFloats out(size_t(height * width * dim));
        ASSERT_EQ(posenc_sinusoid_table_2d(context(), height, width, dim, 10000.0, layout,
                                           POSENC_F32, out.data()),
                  POSENC_OK);
        EXPECT_TRUE(all_close(out.data(),
                              ref::sinusoid_table_2d(height, width, dim, 10000.0, layout),
                              kSinusoidAtol, 0.0));
        EXPECT_TRUE(out.guards_intact());
      }
    }
  }
}

// MAE's get_2d_sincos_pos_embed, worked out from its definition: a grid of
// meshgrid(w, h), so that the first half of token (x, y)'s D columns is the
// 1D embedding of the column y and the second that of the row x; each 1D
// embedding of D/2 columns is [sin, cos] of pos * w_k, w_k = 10000^(-k /
// (D/4)), k < D/4. That is posenc's SPLIT table with the halves of each row
// swapped (absolute.h).
TEST_P(SinusoidTable2d, IsMaesWithItsHalvesSwapped) {
  const int64_t height = 5, width = 7, dim = 24, half = dim / 2, quarter = dim / 4;
  GuardedFloats out(size_t(height * width * dim));
  ASSERT_EQ(posenc_sinusoid_table_2d(context(), height, width, dim, 10000.0,
                                     POSENC_SINCOS_SPLIT, POSENC_F32, out.data()),
            POSENC_OK);
  const auto mae_1d = [&](double pos, int64_t c) {  // column c of a 1D embedding of D/2
    const int64_t k = c % quarter;
    const double angle = pos / std::pow(10000.0, double(k) / double(quarter));
    return c < quarter ? std::sin(angle) : std::cos(angle);
  };
  for (int64_t x = 0; x < height; ++x) {
    for (int64_t y = 0; y < width; ++y) {
      const float* row = out.data() + (x * width + y) * dim;
      for (int64_t c = 0; c < half; ++c) {
        // MAE's column c is the column's embedding; its column half + c the row's.
        EXPECT_NEAR(row[half + c], mae_1d(double(y), c), kSinusoidAtol) << x << "," << y;
        EXPECT_NEAR(row[c], mae_1d(double(x), c), kSinusoidAtol) << x << "," << y;
      }
    }
  }
}

TEST_P(SinusoidTable2d, Bf16) {
  std::vector<uint16_t> out(size_t(3 * 7 * 8));
  ASSERT_EQ(posenc_sinusoid_table_2d(context(), 3, 7, 8, 10000.0, POSENC_SINCOS_SPLIT,
                                     POSENC_BF16, out.data()),
            POSENC_OK);
  EXPECT_TRUE(all_close_bf16(out.data(),
                             ref::sinusoid_table_2d(3, 7, 8, 10000.0, POSENC_SINCOS_SPLIT),
                             1e-6, kBf16Rtol));
}

class AddSinusoid : public IsaTest {};

TEST_P(AddSinusoid, OutOfPlaceAndInPlace) {
  for (int64_t batch : {1, 3}) {
    for (int64_t tokens : {1, 17}) {
      for (int64_t dim : {1, 3, 64, 129}) {
        for (int64_t offset : {0, 100000}) {
          for (auto layout : kLayouts) {
            SCOPED_TRACE(testing::Message() << "B " << batch << " T " << tokens << " D " << dim
                                            << " offset " << offset << " layout " << layout);
            const size_t n = size_t(batch * tokens * dim);
            const std::vector<float> x = random_floats(n, uint32_t(n + offset));
            const auto want =
                ref::add_sinusoid(batch, tokens, dim, offset, 10000.0, layout, x.data());
            GuardedFloats out(n);
            ASSERT_EQ(posenc_add_sinusoid(context(), batch, tokens, dim, offset, 10000.0, layout,
                                          x.data(), out.data()),
                      POSENC_OK);
            EXPECT_TRUE(all_close(out.data(), want, 4e-6, 1e-6));
            EXPECT_TRUE(out.guards_intact());

            std::vector<float> in_place = x;
            ASSERT_EQ(posenc_add_sinusoid(context(), batch, tokens, dim, offset, 10000.0, layout,
                                          in_place.data(), in_place.data()),
                      POSENC_OK);
            EXPECT_TRUE(all_close(in_place.data(), want, 4e-6, 1e-6));
          }
        }
      }
    }
  }
}

// Decoding one token at a time with an offset equals the rows of one call.
TEST_P(AddSinusoid, DecodeStepsEqualFullSequence) {
  const int64_t tokens = 9, dim = 24;
  const std::vector<float> x = random_floats(size_t(tokens * dim), 3);
  std::vector<float> full(x.size()), step(x.size());
  ASSERT_EQ(posenc_add_sinusoid(context(), 1, tokens, dim, 0, 10000.0, POSENC_SINCOS_SPLIT,
                                x.data(), full.data()),
            POSENC_OK);
  for (int64_t t = 0; t < tokens; ++t) {
    ASSERT_EQ(posenc_add_sinusoid(context(), 1, 1, dim, t, 10000.0, POSENC_SINCOS_SPLIT,
                                  x.data() + t * dim, step.data() + t * dim),
              POSENC_OK);
  }
  EXPECT_EQ(full, step);
}

// Large shapes: two sequences of 1031 tokens (prime) of 769 channels
// (BERT's 768 and one), from an offset of 4093.
TEST_P(AddSinusoid, LargeShapes) {
  const int64_t batch = 2, tokens = 1031, dim = 769, offset = 4093;
  for (auto layout : kLayouts) {
    const std::vector<float> x = random_floats(size_t(batch * tokens * dim), 23);
    GuardedFloats out(x.size());
    ASSERT_EQ(posenc_add_sinusoid(context(), batch, tokens, dim, offset, 10000.0, layout, x.data(),
                                  out.data()),
              POSENC_OK);
    EXPECT_TRUE(all_close(out.data(),
                          ref::add_sinusoid(batch, tokens, dim, offset, 10000.0, layout, x.data()),
                          4e-6, 1e-6))
        << "layout " << layout;
    EXPECT_TRUE(out.guards_intact());
  }
}

class AddLearned : public IsaTest {};

TEST_P(AddLearned, MatchesReference) {
  for (int64_t dim : {1, 5, 64, 100}) {
    for (int64_t offset : {0, 3}) {
      const int64_t batch = 2, tokens = 13, rows = 16;
      const std::vector<float> table = random_floats(size_t(rows * dim), 11);
      const std::vector<float> x = random_floats(size_t(batch * tokens * dim), 12);
      const auto want = ref::add_learned(batch, tokens, dim, offset, table.data(), x.data());
      GuardedFloats out(x.size());
      ASSERT_EQ(posenc_add_learned(context(), batch, tokens, dim, offset, table.data(), rows,
                                   x.data(), out.data()),
                POSENC_OK);
      EXPECT_TRUE(all_close(out.data(), want, 0.0, 1e-7));
      EXPECT_TRUE(out.guards_intact());
      std::vector<float> in_place = x;
      ASSERT_EQ(posenc_add_learned(context(), batch, tokens, dim, offset, table.data(), rows,
                                   in_place.data(), in_place.data()),
                POSENC_OK);
      EXPECT_TRUE(all_close(in_place.data(), want, 0.0, 1e-7));
    }
  }
}

TEST_P(AddLearned, RejectsRowsPastTheTable) {
  const std::vector<float> table(16 * 4, 1.0f), x(10 * 4, 1.0f);
  GuardedFloats out(x.size());
  EXPECT_EQ(posenc_add_learned(context(), 1, 10, 4, 7, table.data(), 16, x.data(), out.data()),
            POSENC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(posenc_last_error()).find("table_rows"), std::string::npos);
  EXPECT_TRUE(out.payload_untouched());
}

// Large shapes: two sequences of 1031 tokens of BERT's 768 channels, from
// row 61 of the table.
TEST_P(AddLearned, LargeShapes) {
  const int64_t batch = 2, tokens = 1031, dim = 768, rows = 1100, offset = 61;
  const std::vector<float> table = random_floats(size_t(rows * dim), 21);
  const std::vector<float> x = random_floats(size_t(batch * tokens * dim), 22);
  GuardedFloats out(x.size());
  ASSERT_EQ(posenc_add_learned(context(), batch, tokens, dim, offset, table.data(), rows, x.data(),
                               out.data()),
            POSENC_OK);
  EXPECT_TRUE(all_close(
      out.data(), ref::add_learned(batch, tokens, dim, offset, table.data(), x.data()), 0.0, 1e-7));
  EXPECT_TRUE(out.guards_intact());
}

class ConcatSinusoid : public IsaTest {};

TEST_P(ConcatSinusoid, LargeShapes) {
  const int64_t batch = 2, tokens = 1031, x_dim = 768, pos_dim = 131, offset = 509;
  for (auto layout : kLayouts) {
    const std::vector<float> x = random_floats(size_t(batch * tokens * x_dim), 24);
    GuardedFloats out(size_t(batch * tokens * (x_dim + pos_dim)));
    ASSERT_EQ(posenc_concat_sinusoid(context(), batch, tokens, x_dim, pos_dim, offset, 10000.0,
                                     layout, x.data(), out.data()),
              POSENC_OK);
    EXPECT_TRUE(all_close(
        out.data(),
        ref::concat_sinusoid(batch, tokens, x_dim, pos_dim, offset, 10000.0, layout, x.data()),
        kSinusoidAtol, 0.0))
        << "layout " << layout;
    EXPECT_TRUE(out.guards_intact());
  }
}

TEST_P(ConcatSinusoid, MatchesReference) {
  for (int64_t x_dim : {1, 5, 64}) {
    for (int64_t pos_dim : {1, 4, 33}) {
      for (auto layout : kLayouts) {
        SCOPED_TRACE(testing::Message() << "x_dim " << x_dim << " pos_dim " << pos_dim
                                        << " layout " << layout);
        const int64_t batch = 2, tokens = 7, offset = 5;
        const std::vector<float> x = random_floats(size_t(batch * tokens * x_dim), 5);
        GuardedFloats out(size_t(batch * tokens * (x_dim + pos_dim)));
        ASSERT_EQ(posenc_concat_sinusoid(context(), batch, tokens, x_dim, pos_dim, offset,
                                         10000.0, layout, x.data(), out.data()),
                  POSENC_OK);
        EXPECT_TRUE(all_close(out.data(),
                              ref::concat_sinusoid(batch, tokens, x_dim, pos_dim, offset,
                                                   10000.0, layout, x.data()),
                              kSinusoidAtol, 0.0));
        EXPECT_TRUE(out.guards_intact());
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(SinusoidTable);
POSENC_INSTANTIATE_ISA_TESTS(SinusoidTable2d);
POSENC_INSTANTIATE_ISA_TESTS(AddSinusoid);
POSENC_INSTANTIATE_ISA_TESTS(AddLearned);
POSENC_INSTANTIATE_ISA_TESTS(ConcatSinusoid);

// Count axes of 0 (length, height, width, batch, tokens): POSENC_OK with NULL
// or real tensors, nothing written; the other arguments are still checked.
TEST(AbsoluteEmptyCalls, SinusoidTables) {
  constexpr auto kI = POSENC_SINCOS_INTERLEAVED;
  GuardedFloats out(64);
  float* o = out.data();
  for (float* dst : {static_cast<float*>(nullptr), o}) {
    EXPECT_EQ(posenc_sinusoid_table(nullptr, 0, 6, 3, 1e4, kI, POSENC_F32, dst), POSENC_OK);
    EXPECT_EQ(posenc_sinusoid_table(nullptr, 0, 6, 0, 1e4, kI, POSENC_BF16, dst), POSENC_OK);
    EXPECT_EQ(posenc_sinusoid_table_2d(nullptr, 0, 5, 8, 1e4, kI, POSENC_F32, dst), POSENC_OK);
    EXPECT_EQ(posenc_sinusoid_table_2d(nullptr, 5, 0, 8, 1e4, kI, POSENC_BF16, dst), POSENC_OK);
  }
  EXPECT_TRUE(fails_with(
      posenc_sinusoid_table(nullptr, 0, 6, 0, 1e4, posenc_sincos_layout(7), POSENC_F32, o),
      POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 0, 6, 0, 1.0, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "base"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 0, 6, -1, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "start"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 0, 0, 0, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "dim must be >= 1"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 0, 6, 0, 1e4, kI, posenc_dtype(9), o),
                         POSENC_ERROR_INVALID_ARGUMENT, "out_dtype"));
  EXPECT_TRUE(
      fails_with(posenc_sinusoid_table(nullptr, 0, 6, 0, 1e4, kI, POSENC_F32, offset_bytes(o, 1)),
                 POSENC_ERROR_INVALID_ARGUMENT, "out"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, -1, 6, 0, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "length must be >= 0 (got -1)"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table_2d(nullptr, 0, -3, 8, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "width must be >= 0 (got -3)"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table_2d(nullptr, 0, 5, 7, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "dim must be even"));
  EXPECT_TRUE(out.guards_intact());
  EXPECT_TRUE(out.payload_untouched());
}

TEST(AbsoluteEmptyCalls, AddAndConcat) {
  constexpr auto kI = POSENC_SINCOS_INTERLEAVED;
  GuardedFloats x(64, 0.5f), out(64);
  const std::vector<float> table(30, 1.0f);  // [5, 6]
  float* o = out.data();
  for (const auto& [batch, tokens] : {std::pair<int64_t, int64_t>{0, 7}, {2, 0}, {0, 0}}) {
    for (bool null : {true, false}) {
      const float* in = null ? nullptr : x.data();
      float* dst = null ? nullptr : o;
      EXPECT_EQ(posenc_add_sinusoid(nullptr, batch, tokens, 6, 3, 1e4, kI, in, dst), POSENC_OK);
      EXPECT_EQ(posenc_add_learned(nullptr, batch, std::min<int64_t>(tokens, 3), 6, 1, table.data(),
                                   5, in, dst),
                POSENC_OK);
      EXPECT_EQ(posenc_concat_sinusoid(nullptr, batch, tokens, 6, 4, 0, 1e4, kI, in, dst),
                POSENC_OK);
    }
  }
  // In place, and out over x: empty ranges overlap nothing.
  EXPECT_EQ(posenc_add_sinusoid(nullptr, 0, 4, 6, 0, 1e4, kI, x.data(), x.data()), POSENC_OK);
  EXPECT_EQ(posenc_concat_sinusoid(nullptr, 2, 0, 6, 4, 0, 1e4, kI, x.data(), x.data()), POSENC_OK);
  EXPECT_TRUE(fails_with(
      posenc_add_sinusoid(nullptr, 0, 4, 6, 0, 1e4, posenc_sincos_layout(-1), x.data(), o),
      POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 0, 4, 6, -2, 1e4, kI, x.data(), o),
                         POSENC_ERROR_INVALID_ARGUMENT, "offset"));
  EXPECT_TRUE(
      fails_with(posenc_add_sinusoid(nullptr, 2, 0, 6, 0, 1e4, kI, offset_bytes(x.data(), 2), o),
                 POSENC_ERROR_INVALID_ARGUMENT, "x"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 2, -1, 6, 0, 1e4, kI, x.data(), o),
                         POSENC_ERROR_INVALID_ARGUMENT, "tokens must be >= 0 (got -1)"));
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 0, 3, 6, 0, nullptr, 5, nullptr, nullptr),
                         POSENC_ERROR_NULL_POINTER, "table"));
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 0, 3, 6, 3, table.data(), 5, nullptr, nullptr),
                         POSENC_ERROR_SHAPE_MISMATCH, "table_rows"));
  // A table of no rows serves no tokens, and may be NULL.
  EXPECT_EQ(posenc_add_learned(nullptr, 2, 0, 6, 0, nullptr, 0, x.data(), o), POSENC_OK);
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 2, 1, 6, 0, nullptr, 0, x.data(), o),
                         POSENC_ERROR_SHAPE_MISMATCH, "tokens (1) exceeds table_rows (0)"));
  EXPECT_TRUE(
      fails_with(posenc_add_learned(nullptr, 0, 0, 6, 0, table.data(), -1, nullptr, nullptr),
                 POSENC_ERROR_INVALID_ARGUMENT, "table_rows must be >= 0 (got -1)"));
  EXPECT_TRUE(
      fails_with(posenc_add_learned(nullptr, -1, 3, 6, 0, table.data(), 5, nullptr, nullptr),
                 POSENC_ERROR_INVALID_ARGUMENT, "batch must be >= 0 (got -1)"));
  EXPECT_TRUE(fails_with(posenc_concat_sinusoid(nullptr, 2, 0, 0, 4, 0, 1e4, kI, nullptr, nullptr),
                         POSENC_ERROR_INVALID_ARGUMENT, "x_dim must be >= 1"));
  EXPECT_TRUE(fails_with(
      posenc_concat_sinusoid(nullptr, 2, 0, 6, 4, 0, 1e4, kI, nullptr, offset_bytes(o, 3)),
      POSENC_ERROR_INVALID_ARGUMENT, "out"));
  EXPECT_TRUE(out.guards_intact() && x.guards_intact());
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_TRUE(x.payload_untouched());
}

}  // namespace
}  // namespace posenc::test
