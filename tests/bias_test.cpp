// The position biases of posenc/bias.h: the index rules on small cases
// written out from the models' definitions, the dense bias of every kind
// against the reference loops on every ISA path, ALiBi's slopes, and the
// resizes against values worked out from the interpolation formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "kernels/kernel_table.hpp"
#include "ops/bias/bias_rows.hpp"
#include "ops/bias/t5_bucket.hpp"
#include "posenc/bias.hpp"
#include "posenc/posenc.h"
#include "reference/bias.hpp"

namespace posenc::test {
namespace {

// A table whose value at (row, head) is row + 1000 * head, exact in fp32:
// the bias then shows which row each (query, key) read.
std::vector<float> index_revealing_table(int64_t rows, int64_t heads, bool heads_first) {
  std::vector<float> table(size_t(rows * heads));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      table[size_t(heads_first ? h * rows + r : r * heads + h)] = float(r + 1000 * h);
    }
  }
  return table;
}

std::vector<float> dense_bias(const posenc_position_bias_desc& desc, const float* table,
                              posenc_context* context = nullptr) {
  std::vector<float> out(size_t(desc.heads * desc.q_len * desc.kv_len));
  EXPECT_EQ(posenc_position_bias(context, &desc, table, out.data()), POSENC_OK)
      << posenc_last_error();
  return out;
}

// Swin's relative_position_index of a 3x5 window, written out from Swin's
// code (coordinates, query minus key, shifted by 2 and 4, the row times 9).
// Row 0 is query (0,0): key (0,0) is (0+2)*9 + (0+4) = 22, key (2,4) is 0.
const int64_t kSwin3x5[15][15] = {
    {22, 21, 20, 19, 18, 13, 12, 11, 10, 9, 4, 3, 2, 1, 0},
    {23, 22, 21, 20, 19, 14, 13, 12, 11, 10, 5, 4, 3, 2, 1},
    {24, 23, 22, 21, 20, 15, 14, 13, 12, 11, 6, 5, 4, 3, 2},
    {25, 24, 23, 22, 21, 16, 15, 14, 13, 12, 7, 6, 5, 4, 3},
    {26, 25, 24, 23, 22, 17, 16, 15, 14, 13, 8, 7, 6, 5, 4},
    {31, 30, 29, 28, 27, 22, 21, 20, 19, 18, 13, 12, 11, 10, 9},
    {32, 31, 30, 29, 28, 23, 22, 21, 20, 19, 14, 13, 12, 11, 10},
    {33, 32, 31, 30, 29, 24, 23, 22, 21, 20, 15, 14, 13, 12, 11},
    {34, 33, 32, 31, 30, 25, 24, 23, 22, 21, 16, 15, 14, 13, 12},
    {35, 34, 33, 32, 31, 26, 25, 24, 23, 22, 17, 16, 15, 14, 13},
    {40, 39, 38, 37, 36, 31, 30, 29, 28, 27, 22, 21, 20, 19, 18},
    {41, 40, 39, 38, 37, 32, 31, 30, 29, 28, 23, 22, 21, 20, 19},
    {42, 41, 40, 39, 38, 33, 32, 31, 30, 29, 24, 23, 22, 21, 20},
    {43, 42, 41, 40, 39, 34, 33, 32, 31, 30, 25, 24, 23, 22, 21},
    {44, 43, 42, 41, 40, 35, 34, 33, 32, 31, 26, 25, 24, 23, 22},
};

// The dense bias of a window over an index-revealing table reads the rows of
// `literal` ([n, n]), and the reference's index matrix is the same.
void expect_window_rows(int64_t height, int64_t width, int class_token, const int64_t* literal) {
  const int64_t n = height * width + class_token, heads = 3;
  const std::vector<int64_t> reference_index =
      reference::swin_relative_position_index(height, width, class_token != 0);
  posenc_position_bias_desc desc = position_bias_desc(POSENC_POSITION_BIAS_TABLE_2D, heads, n, n);
  desc.window_height = height;
  desc.window_width = width;
  desc.class_token = class_token;
  const int64_t rows = (2 * height - 1) * (2 * width - 1) + 3 * class_token;
  const std::vector<float> table = index_revealing_table(rows, heads, false);
  const std::vector<float> out = dense_bias(desc, table.data());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(reference_index[size_t(i * n + j)], literal[i * n + j]) << i << "," << j;
      for (int64_t h = 0; h < heads; ++h) {
        EXPECT_EQ(out[size_t((h * n + i) * n + j)], float(literal[i * n + j] + 1000 * h))
            << "head " << h << " query " << i << " key " << j;
      }
    }
  }
}

TEST(BiasIndexRules, Swin3x5WindowReadsSwinsIndexMatrix) {
  expect_window_rows(3, 5, 0, &kSwin3x5[0][0]);
}

// BEiT's 2x2 window with its class token, written out from BEiT's
// gen_relative_position_index: L = 3 * 3 = 9 relative rows, then row 9 for
// class to token (query 0), 10 for token to class (key 0), 11 for class to
// class; the cells as Swin's (query (0,0), key (1,1) is (−1+1)*3 + (−1+1) = 0).
const int64_t kBeit2x2[5][5] = {
    {11, 9, 9, 9, 9}, {10, 4, 3, 1, 0}, {10, 5, 4, 2, 1}, {10, 7, 6, 4, 3}, {10, 8, 7, 5, 4},
};

TEST(BiasIndexRules, BeitClassTokenRows) { expect_window_rows(2, 2, 1, &kBeit2x2[0][0]); }

// T5's buckets of the distances -200..200 (key minus query) as runs: each
// pair is the first distance of a run and its bucket, the run lasting to the
// next pair. Worked out from _relative_position_bucket's formula in Python:
// in double, and in float32 tensors as transformers' code runs it (torch
// 1.13); both agree for T5's defaults (distance +-64 is exactly 6.0 past the
// 8 exact buckets there). For bidirectional 18 buckets and max_distance 128
// they do not: float32 gives distances 8, 16, 64 (and -8, -16, -64) one
// bucket more than double, and the table holds the float32 buckets.
struct Run {
  int64_t first_distance, bucket;
};
struct T5Config {
  bool bidirectional;
  int64_t num_buckets, max_distance;
  std::vector<Run> runs;
};
const std::vector<T5Config>& t5_configs() {
  static const std::vector<T5Config> configs{
      {true, 32, 128, {{-200, 15}, {-90, 14}, {-63, 13}, {-45, 12}, {-31, 11}, {-22, 10},
                       {-15, 9},   {-11, 8},  {-7, 7},   {-6, 6},   {-5, 5},   {-4, 4},
                       {-3, 3},    {-2, 2},   {-1, 1},   {0, 0},    {1, 17},   {2, 18},
                       {3, 19},    {4, 20},   {5, 21},   {6, 22},   {7, 23},   {8, 24},
                       {12, 25},   {16, 26},  {23, 27},  {32, 28},  {46, 29},  {64, 30},
                       {91, 31}}},
      {false, 32, 128, {{-200, 31}, {-112, 30}, {-98, 29}, {-86, 28}, {-76, 27}, {-66, 26},
                        {-58, 25},  {-51, 24},  {-45, 23}, {-39, 22}, {-34, 21}, {-30, 20},
                        {-26, 19},  {-23, 18},  {-20, 17}, {-18, 16}, {-15, 15}, {-14, 14},
                        {-13, 13},  {-12, 12},  {-11, 11}, {-10, 10}, {-9, 9},   {-8, 8},
                        {-7, 7},    {-6, 6},    {-5, 5},   {-4, 4},   {-3, 3},   {-2, 2},
                        {-1, 1},    {0, 0}}},
      {true, 18, 128, {{-200, 8}, {-63, 7}, {-31, 6}, {-15, 5}, {-7, 4}, {-3, 3}, {-2, 2},
                       {-1, 1}, {0, 0}, {1, 10}, {2, 11}, {3, 12}, {4, 13}, {8, 14},
                       {16, 15}, {32, 16}, {64, 17}}},
      {false, 8, 20, {{-200, 7}, {-13, 6}, {-8, 5}, {-5, 4}, {-3, 3}, {-2, 2}, {-1, 1}, {0, 0}}},
  };
  return configs;
}

int64_t expected_bucket(const T5Config& config, int64_t distance) {
  int64_t bucket = -1;
  for (const Run& run : config.runs) {
    if (run.first_distance <= distance) bucket = run.bucket;
  }
  return bucket;
}

TEST(BiasIndexRules, T5BucketsOfDistancesMinus200To200) {
  for (const T5Config& config : t5_configs()) {
    SCOPED_TRACE(std::string(config.bidirectional ? "bidirectional " : "unidirectional ") +
                 std::to_string(config.num_buckets) + " buckets, max_distance " +
                 std::to_string(config.max_distance));
    const ops::T5Buckets rule{config.num_buckets, config.max_distance, config.bidirectional};
    // The dense bias of one query at position 200 against keys 0..400.
    posenc_position_bias_desc desc = position_bias_desc(POSENC_POSITION_BIAS_T5, 2, 1, 401);
    desc.num_buckets = config.num_buckets;
    desc.max_distance = config.max_distance;
    desc.bidirectional = config.bidirectional;
    desc.query_offset = 200;
    const std::vector<float> table = index_revealing_table(config.num_buckets, 2, false);
    const std::vector<float> out = dense_bias(desc, table.data());
    for (int64_t d = -200; d <= 200; ++d) {
      const int64_t want = expected_bucket(config, d);
      EXPECT_EQ(rule.bucket(d), want) << "distance " << d;
      EXPECT_EQ(reference::t5_relative_position_bucket(d, config.bidirectional,
                                                       config.num_buckets, config.max_distance),
                want)
          << "distance " << d;
      EXPECT_EQ(out[size_t(d + 200)], float(want)) << "distance " << d;
      EXPECT_EQ(out[size_t(401 + d + 200)], float(want + 1000)) << "distance " << d;
    }
  }
}

// A bucket on the edge of an fp32 log's rounding: unidirectional, 65536
// buckets, max_distance 3276803, distance -539211 is bucket 52696 in
// transformers' _relative_position_bucket (torch 1.13) and with a correctly
// rounded log of the ratio 539211 / 32768; glibc's logf is an ulp low there,
// which gave 52695.
TEST(BiasIndexRules, T5BucketTakesACorrectlyRoundedLog) {
  constexpr int64_t kBuckets = 65536, kMaxDistance = 3276803, kDistance = -539211, kWant = 52696;
  EXPECT_EQ((ops::T5Buckets{kBuckets, kMaxDistance, false}.bucket(kDistance)), kWant);
  EXPECT_EQ(reference::t5_relative_position_bucket(kDistance, false, kBuckets, kMaxDistance),
            kWant);
  posenc_position_bias_desc desc = position_bias_desc(POSENC_POSITION_BIAS_T5, 1, 1, 1);
  desc.num_buckets = kBuckets;
  desc.max_distance = kMaxDistance;
  desc.bidirectional = 0;
  desc.query_offset = -kDistance;  // one query at 539211, one key at 0
  const std::vector<float> table = index_revealing_table(kBuckets, 1, false);
  EXPECT_EQ(dense_bias(desc, table.data())[0], float(kWant));
}

// 1D table [heads, 2K+1], K = 2: row K + clamp(j - (p + i), -K, K).
TEST(BiasIndexRules, Table1dRowsAreKeyMinusQueryClamped) {
  posenc_position_bias_desc desc = position_bias_desc(POSENC_POSITION_BIAS_TABLE_1D, 2, 2, 6);
  desc.max_distance = 2;
  desc.query_offset = 1;
  const std::vector<float> table = index_revealing_table(5, 2, true);
  const std::vector<float> out = dense_bias(desc, table.data());
  // Query 0 at position 1: distances -1..4; query 1 at 2: -2..3.
  const std::vector<float> head0 = {1, 2, 3, 4, 4, 4, 0, 1, 2, 3, 4, 4};
  for (size_t k = 0; k < head0.size(); ++k) {
    EXPECT_EQ(out[k], head0[k]) << k;
    EXPECT_EQ(out[12 + k], head0[k] + 1000) << k;
  }
}

TEST(BiasIndexRules, AlibiSlopesOf6And8And12Heads) {
  // 8 heads: 2^-1 .. 2^-8.
  EXPECT_EQ(alibi_slopes(8), (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f,
                                                  0.015625f, 0.0078125f, 0.00390625f}));
  // 6 heads (BLOOM's rule): the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then
  // the odd powers of the 8-head base 2^-1: 2^-1, 2^-3.
  EXPECT_EQ(alibi_slopes(6),
            (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f}));
  // 12 heads: 2^-1 .. 2^-8, then the odd powers of the 16-head base 2^-0.5.
  const std::vector<double> twelve = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125,
                                      0.00390625, 0.70710678118654752, 0.35355339059327376,
                                      0.17677669529663688, 0.08838834764831844};
  const std::vector<float> got = alibi_slopes(12);
  ASSERT_EQ(got.size(), twelve.size());
  for (size_t h = 0; h < twelve.size(); ++h) {
    EXPECT_EQ(got[h], float(twelve[h])) << h;
    EXPECT_NEAR(reference::alibi_slopes(12)[h], twelve[h], 1e-15) << h;
  }
  EXPECT_EQ(alibi_slopes(1), std::vector<float>{0.00390625f});
}

TEST(BiasIndexRules, AlibiSymmetricIsNegativeAtDistanceMinusTwoToThe31) {
  // The query at 2^31 against key 0: distance -2^31, bias -slope * 2^31.
  posenc_position_bias_desc desc = position_bias_desc(POSENC_POSITION_BIAS_ALIBI, 1, 1, 2);
  desc.query_offset = int64_t(1) << 31;
  desc.bidirectional = 1;
  const float slope = 0.5f;
  EXPECT_EQ(dense_bias(desc, &slope), (std::vector<float>{-1073741824.0f, -1073741824.0f}));
}

TEST(BiasIndexRules, AlibiCausalAndSymmetricWithOffset) {
  // 2 heads: slopes 2^-4 and 2^-8; queries at positions 1 and 2, keys 0..2.
  posenc_position_bias_desc desc = position_bias_desc(POSENC_POSITION_BIAS_ALIBI, 2, 2, 3);
  desc.query_offset = 1;
  const float s = 0.0625f;
  EXPECT_EQ(dense_bias(desc, nullptr)[0], -s);
  const std::vector<float> causal = dense_bias(desc, nullptr);
  EXPECT_EQ(std::vector<float>(causal.begin(), causal.begin() + 6),
            (std::vector<float>{-s, 0, s, -2 * s, -s, 0}));
  EXPECT_EQ(causal[6], -0.00390625f);
  desc.bidirectional = 1;
  const std::vector<float> symmetric = dense_bias(desc, nullptr);
  EXPECT_EQ(std::vector<float>(symmetric.begin(), symmetric.begin() + 6),
            (std::vector<float>{-s, 0, -s, -2 * s, -s, 0}));
  // Given slopes are used as they are.
  const std::vector<float> given = {2.0f, -1.0f};
  EXPECT_EQ(dense_bias(desc, given.data())[3], -4.0f);
  EXPECT_EQ(dense_bias(desc, given.data())[6], 1.0f);
}

// Every kind on every ISA path against the reference, on shapes with tails,
// offsets (negative too) and q_len != kv_len.
class PositionBias : public IsaTest {};

std::vector<posenc_position_bias_desc> reference_descs() {
  std::vector<posenc_position_bias_desc> descs;
  // The new desc, to set its kind's fields.
  auto add = [&](posenc_position_bias_kind kind, int64_t heads, int64_t q,
                 int64_t kv) -> posenc_position_bias_desc& {
    descs.push_back(position_bias_desc(kind, heads, q, kv));
    return descs.back();
  };
  for (const auto& [wh, ww, ct] : {std::tuple{7, 7, 0}, std::tuple{3, 5, 1}, std::tuple{1, 4, 0},
                                   std::tuple{5, 2, 1}}) {
    const int64_t n = wh * ww + ct;
    posenc_position_bias_desc& d = add(POSENC_POSITION_BIAS_TABLE_2D, 3, n, n);
    d.window_height = wh;
    d.window_width = ww;
    d.class_token = ct;
  }
  for (const auto& [q, kv, k, p] : {std::tuple{17, 17, 16, 0}, std::tuple{1, 33, 32, 32},
                                    std::tuple{13, 29, 5, -3}, std::tuple{40, 9, 0, 7}}) {
    posenc_position_bias_desc& d = add(POSENC_POSITION_BIAS_TABLE_1D, 2, q, kv);
    d.max_distance = k;
    d.query_offset = p;
  }
  for (const auto& [q, kv, buckets, md, bi, p] :
       {std::tuple{67, 67, 32, 128, 1, 0}, std::tuple{3, 300, 32, 128, 0, 297},
        std::tuple{45, 31, 18, 20, 1, -5}, std::tuple{1, 5, 8, 20, 1, 1000}}) {
    posenc_position_bias_desc& d = add(POSENC_POSITION_BIAS_T5, 5, q, kv);
    d.num_buckets = buckets;
    d.max_distance = md;
    d.bidirectional = bi;
    d.query_offset = p;
  }
  for (const auto& [heads, q, kv, bi, p] :
       {std::tuple{6, 19, 19, 0, 0}, std::tuple{12, 1, 70, 0, 69}, std::tuple{5, 23, 11, 1, -4}}) {
    posenc_position_bias_desc& d = add(POSENC_POSITION_BIAS_ALIBI, heads, q, kv);
    d.bidirectional = bi;
    d.query_offset = p;
  }
  // Distances past int32 (a query offset of 2^40 - 3): the rows' 64-bit path.
  add(POSENC_POSITION_BIAS_ALIBI, 3, 2, 5).query_offset = (int64_t(1) << 40) - 3;
  // Rows whose first distance is -2^31 + 1 (|d| fits int32) and -2^31 (it
  // does not), both ways.
  for (int bi : {0, 1}) {
    posenc_position_bias_desc& d = add(POSENC_POSITION_BIAS_ALIBI, 2, 2, 4);
    d.bidirectional = bi;
    d.query_offset = (int64_t(1) << 31) - 1;
  }
  return descs;
}

int64_t table_floats(const posenc_position_bias_desc& d) {
  switch (d.kind) {
    case POSENC_POSITION_BIAS_TABLE_2D:
      return ((2 * d.window_height - 1) * (2 * d.window_width - 1) + 3 * d.class_token) * d.heads;
    case POSENC_POSITION_BIAS_TABLE_1D: return (2 * d.max_distance + 1) * d.heads;
    case POSENC_POSITION_BIAS_T5: return d.num_buckets * d.heads;
    default: return d.heads;
  }
}

TEST_P(PositionBias, EveryKindMatchesTheReference) {
  uint32_t seed = 40;
  for (const posenc_position_bias_desc& d : reference_descs()) {
    SCOPED_TRACE("kind " + std::to_string(d.kind) + " heads " + std::to_string(d.heads) +
                 " q " + std::to_string(d.q_len) + " kv " + std::to_string(d.kv_len));
    const std::vector<float> table = random_floats(size_t(table_floats(d)), ++seed);
    // ALiBi both ways: given slopes, and the standard ones.
    for (const float* t : {table.data(), d.kind == POSENC_POSITION_BIAS_ALIBI ? nullptr
                                                                             : table.data()}) {
      GuardedFloats out(size_t(d.heads * d.q_len * d.kv_len));
      ASSERT_EQ(posenc_position_bias(context(), &d, t, out.data()), POSENC_OK)
          << posenc_last_error();
      EXPECT_TRUE(out.guards_intact());
      const std::vector<double> want = reference::position_bias(d, t);
      // Tables are copied exactly; ALiBi is slope * d in fp32.
      EXPECT_TRUE(
          all_close(out.data(), want, 0.0, d.kind == POSENC_POSITION_BIAS_ALIBI ? 3e-7 : 0));
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(PositionBias);

// Outputs of 32 MiB and more are written with non-temporal stores, row by
// row: rows of 1024 keys on whole cache lines, and of 1023 keys at every
// alignment (one float past the allocation's); 2D windows' rows likewise.
// Sampled rows against the reference (one query's desc each), the guards
// around the output intact.
TEST_P(PositionBias, StreamedOutputsMatchTheReference) {
  std::vector<posenc_position_bias_desc> descs;
  for (const auto& [q, kv] : {std::pair<int64_t, int64_t>{1024, 1024}, {1027, 1023}}) {
    for (posenc_position_bias_kind kind :
         {POSENC_POSITION_BIAS_TABLE_1D, POSENC_POSITION_BIAS_T5, POSENC_POSITION_BIAS_ALIBI}) {
      posenc_position_bias_desc d = position_bias_desc(kind, 8, q, kv);
      d.query_offset = kv == 1024 ? 0 : -300;
      if (kind == POSENC_POSITION_BIAS_TABLE_1D) d.max_distance = 600;
      if (kind == POSENC_POSITION_BIAS_T5) d.max_distance = 128;
      d.bidirectional = kind != POSENC_POSITION_BIAS_TABLE_1D && kv == 1023;
      descs.push_back(d);
    }
  }
  // And Swin's windows of 24 x 24 with 27 heads, rows of 576 keys (whole
  // lines), and BEiT's with the class token, rows of 577 (every alignment).
  for (const int class_token : {0, 1}) {
    const int64_t tokens = 576 + class_token;
    posenc_position_bias_desc window =
        position_bias_desc(POSENC_POSITION_BIAS_TABLE_2D, 27, tokens, tokens);
    window.window_height = window.window_width = 24;
    window.class_token = class_token;
    descs.push_back(window);
  }
  uint32_t seed = 60;
  for (const posenc_position_bias_desc& d : descs) {
    SCOPED_TRACE("kind " + std::to_string(d.kind) + " q " + std::to_string(d.q_len) + " kv " +
                 std::to_string(d.kv_len));
    ASSERT_GE(d.heads * d.q_len * d.kv_len * int64_t(sizeof(float)), int64_t(32) << 20);
    const std::vector<float> table = random_floats(size_t(table_floats(d)), ++seed);
    const float* t = d.kind == POSENC_POSITION_BIAS_ALIBI ? nullptr : table.data();
    GuardedFloats out(size_t(d.heads * d.q_len * d.kv_len));
    ASSERT_EQ(posenc_position_bias(context(), &d, t, out.data()), POSENC_OK)
        << posenc_last_error();
    EXPECT_TRUE(out.guards_intact());
    if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
      EXPECT_TRUE(all_close(out.data(), reference::position_bias(d, t), 0.0, 0.0));
      continue;
    }
    const auto expect_row = [&](int64_t r) {
      const int64_t h = r / d.q_len, i = r % d.q_len;
      posenc_position_bias_desc one = d;
      one.q_len = 1;
      one.query_offset = d.query_offset + i;
      const std::vector<double> want = reference::position_bias(one, t);
      EXPECT_TRUE(all_close(out.data() + r * d.kv_len,
                            std::vector<double>(want.begin() + h * d.kv_len,
                                                want.begin() + (h + 1) * d.kv_len),
                            0.0, d.kind == POSENC_POSITION_BIAS_ALIBI ? 3e-7 : 0))
          << "head " << h << " query " << i;
    };
    const int64_t rows = d.heads * d.q_len;
    for (int64_t r = 0; r < rows; r += 97) expect_row(r);
    expect_row(rows - 1);
  }
}

// The dense bias's row kernels on the ISA's own path.
class BiasRowKernels : public IsaTest {};

// ALiBi's rows for its kernels: check(slope, bidirectional, count, d0,
// misaligned) for distances across zero, next to the int32 limits (the
// vector path holds d0 > INT32_MIN and d0 + count <= INT32_MAX) and past
// them, at four alignments of the output (misaligned floats past an
// aligned start); stops at the first fatal failure.
template <class Check>
void for_each_alibi_row(const Check& check) {
  const int64_t int32_min = INT32_MIN, int32_max = INT32_MAX;
  for (const float slope : {0.0625f, -1.5f, 0.00390625f * 3.0f}) {
    for (const bool bidirectional : {false, true}) {
      for (const int64_t count : {0, 1, 3, 15, 16, 17, 33, 300}) {
        for (const int64_t d0 : {int64_t(-50), int64_t(0), int64_t(-count / 2), int32_min,
                                 int32_min + 1, int32_max - count, int32_max - count + 1,
                                 (int64_t(1) << 40) + 3, -(int64_t(1) << 40)}) {
          for (int64_t misaligned = 0; misaligned < 16; misaligned += 5) {
            SCOPED_TRACE(testing::Message() << "slope " << slope << " bidirectional "
                                            << bidirectional << " count " << count << " d0 "
                                            << d0 << " at +" << misaligned);
            check(slope, bidirectional, count, d0, misaligned);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// ALiBi's distance d as the float its bias multiplies.
float alibi_distance(bool bidirectional, int64_t d) {
  return float(bidirectional ? -std::llabs(d) : d);
}

// ALiBi's, both variants, against slope * float(d) computed here, bit for
// bit, the floats around the row untouched.
TEST_P(BiasRowKernels, AlibiIsSlopeTimesDistance) {
  const PositionBiasKernels& k = kernels().position_bias;
  std::vector<float> got(400);
  for_each_alibi_row([&](float slope, bool bidirectional, int64_t count, int64_t d0,
                         int64_t misaligned) {
    for (const auto row : {k.alibi_row, k.alibi_row_stream}) {
      std::fill(got.begin(), got.end(), 7.0f);
      row(slope, bidirectional, d0, count, got.data() + misaligned);
      for (int64_t c = 0; c < count; ++c) {
        ASSERT_EQ(got[size_t(misaligned + c)], slope * alibi_distance(bidirectional, d0 + c))
            << "c " << c;
      }
      ASSERT_EQ(got[size_t(misaligned + count)], 7.0f);
      if (misaligned > 0) {
        ASSERT_EQ(got[size_t(misaligned - 1)], 7.0f);
      }
    }
  });
}

// Whether the path's fused_multiply_add rounds once (AVX-512, AVX2's FMA3,
// NEON), in every build (the sanitizers' too), or as a product and a sum
// (SSE2).
bool fma_fuses(posenc_isa isa) {
#if defined(__x86_64__)
  return isa != POSENC_ISA_BASELINE;
#else
  (void)isa;
  return true;
#endif
}

// The fused attention's ALiBi row: fma(slope, float(d), score), bit for bit
// one fused multiply-add or a product and a sum as the path's fma rounds,
// at every alignment, next to int32's limits and past them; the row's
// maximum returned, the floats around the row untouched.
TEST_P(BiasRowKernels, AlibiAddsSlopeTimesDistanceAndReturnsTheMaximum) {
  const PositionBiasKernels& k = kernels().position_bias;
  const bool fuses = fma_fuses(GetParam());
  const std::vector<float> scores = random_floats(400, 13, -3.0f, 3.0f);
  for_each_alibi_row([&](float slope, bool bidirectional, int64_t count, int64_t d0,
                         int64_t misaligned) {
    std::vector<float> got = scores;
    float* row = got.data() + misaligned;
    const float got_max = k.add_alibi_row(slope, bidirectional, d0, row, count);
    for (int64_t c = 0; c < count; ++c) {
      const float d = alibi_distance(bidirectional, d0 + c), score = scores[size_t(misaligned + c)];
      volatile float product = slope * d;  // (not contracted with the sum)
      const float fused = std::fma(slope, d, score), separate = product + score;
      ASSERT_EQ(row[c], fuses ? fused : separate) << "c " << c;
    }
    ASSERT_EQ(got_max, count == 0 ? -INFINITY : *std::max_element(row, row + count));
    ASSERT_EQ(got[size_t(misaligned + count)], scores[size_t(misaligned + count)]);
    if (misaligned > 0) {
      ASSERT_EQ(got[size_t(misaligned - 1)], scores[size_t(misaligned - 1)]);
    }
  });
}

// A distance and a score get the same bits from the int32 path (d0 past
// INT32_MIN) as from the int64 one (d0 = INT32_MIN), in batches and tails.
TEST_P(BiasRowKernels, AlibiAddIsTheSameOnEitherSideOfInt32) {
  const PositionBiasKernels& k = kernels().position_bias;
  const std::vector<float> scores = random_floats(400, 14, -3.0f, 3.0f);
  for (const float slope : {-1.5f, 0.0625f, 0.3f}) {
    for (const bool bidirectional : {false, true}) {
      std::vector<float> wide = scores, narrow = scores;
      k.add_alibi_row(slope, bidirectional, INT32_MIN, wide.data(), 300);
      k.add_alibi_row(slope, bidirectional, int64_t(INT32_MIN) + 1, narrow.data() + 1, 299);
      wide[0] = narrow[0];  // (distance INT32_MIN: the int64 path only)
      EXPECT_EQ(wide, narrow) << "slope " << slope << " bidirectional " << bidirectional;
    }
  }
}

// TABLE_2D's runs, both variants: runs shorter than a batch, as long,
// longer with a tail, longer than the streamed variant's stage (2048
// floats: copied in pieces), more than a stage holds; each run from its
// own place (strides past the run, as a window's 2Ww - 1), the floats
// around the output untouched.
TEST_P(BiasRowKernels, CopyRunsCopiesEachRun) {
  const PositionBiasKernels& k = kernels().position_bias;
  const std::vector<float> from = random_floats(12000, 12);
  std::vector<float> got(6000);
  for (const int64_t length : {1, 3, 7, 8, 12, 15, 16, 17, 24, 33, 64, 2100}) {
    for (const int64_t runs : {0, 1, 2, 7, 13, 40}) {
      for (const int64_t stride : {length, 2 * length - 1, length + 40}) {
        if (3 + runs * length > int64_t(got.size())) continue;
        SCOPED_TRACE(testing::Message() << runs << " runs of " << length << ", stride " << stride);
        for (const auto copy : {k.copy_runs, k.copy_runs_stream}) {
          std::fill(got.begin(), got.end(), 7.0f);
          copy(from.data() + 5, stride, runs, length, got.data() + 3);
          for (int64_t j = 0; j < int64_t(got.size()); ++j) {
            const int64_t at = j - 3, r = at / length, c = at % length;
            const float want = at >= 0 && r < runs ? from[size_t(5 + r * stride + c)] : 7.0f;
            ASSERT_EQ(got[size_t(j)], want) << "at " << at;
          }
        }
      }
    }
  }
}

// TABLE_2D's runs added to a key block's scores: runs shorter than a
// batch, as long, longer with a tail; first from their start, their last
// column, in between; blocks ending mid-run, spanning many runs, empty;
// strides past the run (a window's 2Ww - 1). The sums and the returned
// maximum exact, the floats around the block untouched.
TEST_P(BiasRowKernels, AddRunsAddsEachRunAndReturnsTheMaximum) {
  const PositionBiasKernels& k = kernels().position_bias;
  const std::vector<float> from = random_floats(12000, 13, -2.0f, 2.0f);
  const std::vector<float> scores = random_floats(3000, 14, -3.0f, 3.0f);
  for (const int64_t length : {1, 3, 7, 8, 15, 16, 17, 33, 64, 100}) {
    for (const int64_t column : {int64_t(0), length / 2, length - 1}) {
      for (const int64_t n : {int64_t(0), int64_t(1), int64_t(5), int64_t(16), length - column,
                              3 * length + 5, int64_t(1000)}) {
        for (const int64_t stride : {length, 2 * length - 1, length + 40}) {
          const int64_t last = column + n - 1;  // the last score's run and column
          if (n > 0 && 5 + last / length * stride + last % length >= int64_t(from.size())) continue;
          SCOPED_TRACE(testing::Message() << "runs of " << length << " from column " << column
                                          << ", " << n << " scores, stride " << stride);
          std::vector<float> got = scores;
          const float got_max =
              k.add_runs(from.data() + 5, stride, column, length, got.data() + 3, n);
          std::vector<float> want = scores;
          float want_max = -std::numeric_limits<float>::infinity();
          for (int64_t c = 0; c < n; ++c) {
            const int64_t t = (column + c) / length, x = (column + c) % length;
            want[size_t(3 + c)] += from[size_t(5 + t * stride + x)];
            want_max = std::max(want_max, want[size_t(3 + c)]);
          }
          ASSERT_EQ(got, want);
          ASSERT_EQ(got_max, want_max);
        }
      }
    }
  }
}

// The row adders the fused attention builds on add what the dense bias
// holds, per block of 1, 5 or 40 keys from every first key (and nothing for
// no keys), and return the block's maximum: TABLE_2D's windows
// (add_window_row with add_runs; class tokens among them: blocks after key
// 0 start inside a key row), the 1D tables' lines (gather_add) and ALiBi's
// rows (add_alibi_row; int32's limits and the 64-bit path among them),
// reference_descs's.
TEST_P(BiasRowKernels, AttentionBlocksAddTheDenseBias) {
  const KernelTable& k = kernels();
  uint32_t seed = 70;
  for (const posenc_position_bias_desc& d : reference_descs()) {
    if (d.kind == POSENC_POSITION_BIAS_T5) continue;  // T5's line is the 1D table's code
    const std::vector<float> table = random_floats(size_t(table_floats(d)), ++seed);
    const float* t = d.kind == POSENC_POSITION_BIAS_ALIBI ? nullptr : table.data();
    const std::vector<float> dense = dense_bias(d, t);
    const ops::Window2d window{d.window_height, d.window_width, d.class_token != 0};
    std::vector<float> entries;
    if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
      entries.resize(size_t(d.heads * window.table_rows()));
      ops::window_entries(window, d.heads, [&](int64_t e) { return table[size_t(e)]; },
                          entries.data());
    }
    const int64_t K = d.max_distance;
    std::vector<float> slopes(size_t(d.heads));
    ASSERT_EQ(posenc_alibi_slopes(d.heads, slopes.data()), POSENC_OK);
    // Blocks of `keys` keys from every first key (the empty one past the
    // row's end too), or none: -inf.
    const auto add_block = [&](int64_t h, int64_t i, int64_t first, int64_t keys, float* block) {
      const int64_t d0 = first - (d.query_offset + i);
      if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
        return ops::add_window_row(window, entries.data() + h * window.table_rows(), i, first, keys,
                                   block, k.position_bias.add_runs);
      }
      if (d.kind == POSENC_POSITION_BIAS_TABLE_1D) {
        return k.attention_bias.gather_add(table.data() + h * (2 * K + 1), d0 + K, 0, 2 * K, 1.0f,
                                           block, keys);
      }
      return k.position_bias.add_alibi_row(slopes[size_t(h)], d.bidirectional != 0, d0, block,
                                           keys);
    };
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t i = 0; i < d.q_len; ++i) {
        for (const int64_t keys : {1, 5, 40}) {
          std::vector<float> row(size_t(d.kv_len), 1.0f);
          for (int64_t first = 0; first < d.kv_len; first += keys) {
            const int64_t count = std::min(keys, d.kv_len - first);
            float* block = row.data() + first;
            ASSERT_EQ(add_block(h, i, first, 0, block), -std::numeric_limits<float>::infinity());
            const float block_max = add_block(h, i, first, count, block);
            ASSERT_EQ(block_max, *std::max_element(block, block + count))
                << "first key " << first << " of " << keys;
          }
          // Within a few ulps of the addends: ALiBi's slope * d + row is
          // one FMA where the ISA has it.
          for (int64_t j = 0; j < d.kv_len; ++j) {
            const float bias = dense[size_t((h * d.q_len + i) * d.kv_len + j)];
            ASSERT_NEAR(row[size_t(j)], 1.0f + bias, 5e-7 * (1.0 + std::abs(bias)))
                << "kind " << d.kind << " head " << h << " query " << i << " key " << j
                << " blocks of " << keys;
          }
        }
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(BiasRowKernels);

// Linear resizes worked out from torch's rule, source s = max((r + 0.5) *
// rows / new_rows - 0.5, 0) between rows floor(s) and the next.
TEST(ResizeRelativeTable, LinearAsTorchInterpolate) {
  // Up, [0, 10, 40] to 5 rows: s = 0 (clamped from -0.2), 0.4, 1.0, 1.6,
  // 2.2 (the last row repeated): 0, 4, 10, 10 + 0.6 * 30, 40.
  const std::vector<float> up_in = {0, 10, 40};
  std::vector<float> up(5);
  resize_relative_table(3, 1, up_in.data(), 5, up.data());
  const std::vector<double> up_want = {0, 4, 10, 28, 40};
  EXPECT_TRUE(all_close(up.data(), up_want, 2e-6, 1e-6));
  // Down, [0, 1, 4, 9, 16] to 3 rows, 2 columns (the second doubled):
  // s = 1/3, 2, 11/3: 1/3, 4, 9 + 7 * 2/3.
  const std::vector<float> down_in = {0, 0, 1, 2, 4, 8, 9, 18, 16, 32};
  std::vector<float> down(6);
  resize_relative_table(5, 2, down_in.data(), 3, down.data());
  const std::vector<double> down_want = {1.0 / 3, 2.0 / 3, 4, 8, 41.0 / 3, 82.0 / 3};
  EXPECT_TRUE(all_close(down.data(), down_want, 2e-6, 1e-6));
  // SAM's sizes (a 14x14 map's 27 rows to a 64x64 map's 127) against the reference.
  const std::vector<float> sam = random_floats(27 * 64, 3);
  std::vector<float> resized(127 * 64);
  resize_relative_table(27, 64, sam.data(), 127, resized.data());
  EXPECT_TRUE(all_close(resized.data(), reference::resize_rows_linear(27, 64, sam.data(), 127),
                        1e-6, 1e-6));
}

// Bicubic: a separable table v(y, x, h) = f(y) g(x) (h + 1) resizes to
// f'(y) g'(x) (h + 1), with f' and g' the 1D resizes worked out with Keys'
// kernel (A = -0.75): K(x) = 1.25|x|^3 - 2.25|x|^2 + 1 for |x| <= 1,
// -0.75|x|^3 + 3.75|x|^2 - 6|x| + 3 for 1 < |x| < 2.
TEST(ResizeRelativeBiasTable2d, BicubicAsTorchInterpolate) {
  // Window 2x3 (grid 3x5) to 3x2 (grid 5x3), BEiT's class-token rows kept.
  // f = [0, 10, 40] to 5: s = -0.2, 0.4, 1, 1.6, 2.2 with weights e.g. at
  // s = -0.2 (t = 0.8) K(1.8) = -0.024, K(0.8) = 0.2, K(0.2) = 0.92,
  // K(1.2) = -0.096 on rows -2, -1, 0, 1 clamped to 0, 0, 0, 1.
  const std::vector<double> f = {0, 10, 40}, f_want = {-0.96, 1.72, 10, 29.08, 42.88};
  // g = [1, 2, 4, 8, 16] to 3: s = 1/3, 2, 11/3 with K(4/3) = -12/108,
  // K(1/3) = 86/108, K(2/3) = 40/108, K(5/3) = -6/108.
  const std::vector<double> g = {1, 2, 4, 8, 16}, g_want = {130.0 / 108, 4, 1480.0 / 108};
  const int64_t heads = 2;
  std::vector<float> in(size_t((15 + 3) * heads));
  for (int64_t y = 0; y < 3; ++y) {
    for (int64_t x = 0; x < 5; ++x) {
      for (int64_t h = 0; h < heads; ++h) {
        in[size_t((y * 5 + x) * heads + h)] = float(f[size_t(y)] * g[size_t(x)] * double(h + 1));
      }
    }
  }
  for (int64_t e = 0; e < 3 * heads; ++e) in[size_t(15 * heads + e)] = float(100 + e);
  std::vector<double> want(size_t((15 + 3) * heads));
  for (int64_t y = 0; y < 5; ++y) {
    for (int64_t x = 0; x < 3; ++x) {
      for (int64_t h = 0; h < heads; ++h) {
        want[size_t((y * 3 + x) * heads + h)] =
            f_want[size_t(y)] * g_want[size_t(x)] * double(h + 1);
      }
    }
  }
  for (int64_t e = 0; e < 3 * heads; ++e) want[size_t(15 * heads + e)] = 100 + e;
  std::vector<float> out(want.size());
  resize_relative_bias_table_2d(heads, 2, 3, 3, 2, true, in.data(), out.data());
  EXPECT_TRUE(all_close(out.data(), want, 1e-5, 1e-6));
  EXPECT_TRUE(all_close(
      out.data(), reference::resize_bias_table_2d(heads, 2, 3, 3, 2, true, in.data()), 1e-5, 1e-6));
  // Swin's 7x7 window (13x13 grid) to 12x12 (23x23), 4 heads, and back down.
  const std::vector<float> swin = random_floats(13 * 13 * 4, 5);
  std::vector<float> up(23 * 23 * 4), down(13 * 13 * 4);
  resize_relative_bias_table_2d(4, 7, 7, 12, 12, false, swin.data(), up.data());
  EXPECT_TRUE(all_close(
      up.data(), reference::resize_bias_table_2d(4, 7, 7, 12, 12, false, swin.data()), 1e-6, 1e-6));
  resize_relative_bias_table_2d(4, 12, 12, 7, 7, false, up.data(), down.data());
  EXPECT_TRUE(all_close(
      down.data(), reference::resize_bias_table_2d(4, 12, 12, 7, 7, false, up.data()), 1e-6, 1e-6));
  // The same size is the identity.
  std::vector<float> same(swin.size());
  resize_relative_bias_table_2d(4, 7, 7, 7, 7, false, swin.data(), same.data());
  EXPECT_EQ(same, swin);
}

// Count axes of 0 (heads, q_len, kv_len, ALiBi's heads, new_rows, a 2D
// table's heads): POSENC_OK with NULL or real tensors, nothing written; the
// other arguments are still checked. Tables with elements stay required.
TEST(BiasEmptyCalls, PositionBias) {
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  GuardedFloats table(512, 0.5f), out(64);
  float* o = out.data();
  auto desc_of = [](posenc_position_bias_kind kind, int64_t heads, int64_t q_len, int64_t kv_len) {
    posenc_position_bias_desc d;
    posenc_position_bias_desc_init(&d, kind, heads, q_len, kv_len);
    if (kind == POSENC_POSITION_BIAS_TABLE_1D) d.max_distance = 3;
    if (kind == POSENC_POSITION_BIAS_TABLE_2D) d.window_height = d.window_width = 2;
    return d;
  };
  for (auto kind :
       {POSENC_POSITION_BIAS_TABLE_1D, POSENC_POSITION_BIAS_T5, POSENC_POSITION_BIAS_ALIBI}) {
    for (const auto& [q_len, kv_len] : {std::pair<int64_t, int64_t>{0, 9}, {5, 0}, {0, 0}}) {
      const posenc_position_bias_desc d = desc_of(kind, 3, q_len, kv_len);
      EXPECT_EQ(posenc_position_bias(nullptr, &d, table.data(), nullptr), POSENC_OK)
          << posenc_last_error();
      EXPECT_EQ(posenc_position_bias(nullptr, &d, table.data(), o), POSENC_OK);
    }
    const posenc_position_bias_desc no_heads = desc_of(kind, 0, 4, 4);
    EXPECT_EQ(posenc_position_bias(nullptr, &no_heads, nullptr, nullptr), POSENC_OK)
        << posenc_last_error();
    EXPECT_EQ(posenc_position_bias(nullptr, &no_heads, table.data(), o), POSENC_OK);
  }
  const posenc_position_bias_desc alibi = desc_of(POSENC_POSITION_BIAS_ALIBI, 4, 0, 9);
  EXPECT_EQ(posenc_position_bias(nullptr, &alibi, nullptr, nullptr), POSENC_OK);
  const posenc_position_bias_desc swin = desc_of(POSENC_POSITION_BIAS_TABLE_2D, 0, 4, 4);
  EXPECT_EQ(posenc_position_bias(nullptr, &swin, nullptr, nullptr), POSENC_OK);
  EXPECT_EQ(posenc_position_bias(nullptr, &swin, table.data(), o), POSENC_OK);

  auto fails = [&](posenc_position_bias_desc d, const float* t, float* dst, posenc_status want,
                   const char* argument) {
    return fails_with(posenc_position_bias(nullptr, &d, t, dst), want, argument);
  };
  const auto t5 = desc_of(POSENC_POSITION_BIAS_T5, 3, 5, 0);
  EXPECT_TRUE(fails(t5, nullptr, nullptr, POSENC_ERROR_NULL_POINTER, "table"));
  EXPECT_TRUE(fails(t5, offset_bytes(table.data(), 1), nullptr, kInvalid, "table"));
  EXPECT_TRUE(fails(t5, table.data(), offset_bytes(o, 2), kInvalid, "out"));
  auto bad = t5;
  bad.num_buckets = 3;
  EXPECT_TRUE(fails(bad, table.data(), nullptr, kInvalid, "desc->num_buckets"));
  bad = t5;
  store_enum(bad.kind, 9);
  EXPECT_TRUE(fails(bad, table.data(), nullptr, kInvalid, "desc->kind"));
  bad = t5;
  bad.kv_len = -1;
  EXPECT_TRUE(fails(bad, table.data(), nullptr, kInvalid, "desc->kv_len must be >= 0 (got -1)"));
  bad = alibi;
  bad.window_height = 2;
  EXPECT_TRUE(fails(bad, nullptr, nullptr, kInvalid, "desc->window_height"));
  bad = swin;
  bad.q_len = bad.kv_len = 0;  // the window's tokens are 4
  EXPECT_TRUE(fails(bad, nullptr, nullptr, POSENC_ERROR_SHAPE_MISMATCH, "desc->q_len"));
  bad = desc_of(POSENC_POSITION_BIAS_TABLE_1D, 2, 0, 3);
  bad.max_distance = -1;
  EXPECT_TRUE(fails(bad, table.data(), nullptr, kInvalid, "desc->max_distance"));
  EXPECT_TRUE(out.guards_intact());
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_TRUE(table.payload_untouched());
}

TEST(BiasEmptyCalls, SlopesAndResizes) {
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  GuardedFloats in(256, 0.5f), out(256);
  float* o = out.data();
  EXPECT_EQ(posenc_alibi_slopes(0, nullptr), POSENC_OK);
  EXPECT_EQ(posenc_alibi_slopes(0, o), POSENC_OK);
  EXPECT_TRUE(fails_with(posenc_alibi_slopes(0, offset_bytes(o, 1)), kInvalid, "slopes"));
  EXPECT_TRUE(
      fails_with(posenc_alibi_slopes(-1, nullptr), kInvalid, "heads must be >= 0 (got -1)"));

  EXPECT_EQ(posenc_resize_relative_table(5, 4, in.data(), 0, nullptr), POSENC_OK);
  EXPECT_EQ(posenc_resize_relative_table(5, 4, in.data(), 0, o), POSENC_OK);
  EXPECT_EQ(posenc_resize_relative_table(5, 4, in.data(), 0, in.data()),
            POSENC_OK);  // an empty out overlaps nothing
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(5, 4, nullptr, 0, nullptr),
                         POSENC_ERROR_NULL_POINTER, "in"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(0, 4, in.data(), 0, nullptr), kInvalid,
                         "rows must be >= 1"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(5, 0, in.data(), 0, nullptr), kInvalid,
                         "dim must be >= 1"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(5, 4, in.data(), 0, offset_bytes(o, 3)),
                         kInvalid, "out"));

  auto resize_2d = [&](int64_t heads, int64_t new_height, int ct, const float* src, float* dst) {
    return posenc_resize_relative_bias_table_2d(heads, 2, 2, new_height, 3, ct, src, dst);
  };
  for (int ct : {0, 1}) {
    EXPECT_EQ(resize_2d(0, 3, ct, nullptr, nullptr), POSENC_OK) << posenc_last_error();
    EXPECT_EQ(resize_2d(0, 3, ct, in.data(), o), POSENC_OK);
  }
  EXPECT_TRUE(fails_with(resize_2d(0, 3, 2, nullptr, nullptr), kInvalid, "class_token"));
  EXPECT_TRUE(
      fails_with(resize_2d(0, 0, 0, nullptr, nullptr), kInvalid, "new_window_height must be >= 1"));
  EXPECT_TRUE(fails_with(resize_2d(0, 3, 0, offset_bytes(in.data(), 2), nullptr), kInvalid, "in"));
  EXPECT_TRUE(
      fails_with(resize_2d(-2, 3, 0, nullptr, nullptr), kInvalid, "heads must be >= 0 (got -2)"));
  // A table too large to address, with heads or without: rows of 2^62 floats.
  EXPECT_TRUE(fails_with(resize_2d(0, int64_t(1) << 61, 0, nullptr, nullptr),
                         POSENC_ERROR_OVERFLOW, "out"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(5, 4, in.data(), int64_t(1) << 61, nullptr),
                         POSENC_ERROR_OVERFLOW, "out"));
  EXPECT_TRUE(out.guards_intact());
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_TRUE(in.payload_untouched());
}

}  // namespace
}  // namespace posenc::test
