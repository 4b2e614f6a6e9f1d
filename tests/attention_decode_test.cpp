// Decoding (1 to 16 queries against up to 35001 keys) on every ISA path,
// fp32 and bf16, with every bias kind that a decode step can have, against
// the double reference loops; the split of the keys (split_keys.hpp) that
// such shapes get, and its bits at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/split_keys.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

constexpr int64_t kHeads = 2, kDim = 16;

// The bias of a decode step. (A 2D map has q_len = kv_len, never a decode
// step: PlanNeverSplitsOtherShapes.)
enum class Bias { none, absolute, clipped_1d, values_1d };

posenc_attention_desc decode_desc(int64_t q_len, int64_t kv_len, Bias bias, int64_t offset,
                                  bool is_causal, bool bthd, posenc_dtype dtype) {
  posenc_attention_desc d = attention_desc(1, kHeads, q_len, kv_len, kDim);
  d.query_offset = offset;
  d.causal = is_causal;
  d.layout = bthd ? POSENC_LAYOUT_BTHD : POSENC_LAYOUT_BHTD;
  d.dtype = dtype;
  if (bias == Bias::absolute) {
    d.bias = POSENC_BIAS_ABSOLUTE;
    d.tables_per_head = 1;
  } else if (bias == Bias::clipped_1d) {
    d.bias = POSENC_BIAS_RELATIVE_1D;
    d.max_distance = 64;
  } else if (bias == Bias::values_1d) {
    d.bias = POSENC_BIAS_RELATIVE_1D;
    d.relative_values = 1;
    d.tables_per_head = 1;
  }
  return d;
}

// One desc's tensors: q, k, v and the tables it reads, random in [-1, 1)
// (bf16-rounded for bf16).
AttentionTensors decode_tensors(const posenc_attention_desc& d) {
  AttentionTensors call(d);
  const size_t table_heads = size_t(d.tables_per_head ? d.heads : 1);
  const size_t rows_1d = size_t(relative_rows(d));
  const size_t kv = size_t(d.batch * d.heads * d.kv_len * d.head_dim);
  call.fill(Tensor::q, size_t(d.batch * d.heads * d.q_len * d.head_dim), 500);
  call.fill(Tensor::k, kv, 501);
  call.fill(Tensor::v, kv, 502);
  if (d.bias == POSENC_BIAS_ABSOLUTE) {
    call.fill(Tensor::table, table_heads * size_t(d.kv_len * d.head_dim), 503);
  }
  if (d.bias == POSENC_BIAS_RELATIVE_1D) {
    call.fill(Tensor::table, table_heads * rows_1d * size_t(d.head_dim), 503);
  }
  if (d.relative_values) {
    call.fill(Tensor::value_table, table_heads * rows_1d * size_t(d.head_dim), 504);
  }
  return call;
}

// got against the call's reference: fp32 within 1e-5 + 1e-4 |want|.
::testing::AssertionResult matches(const std::vector<float>& got, const AttentionTensors& call) {
  return close_to_reference(got, reference::attention(call.desc(), call.reference()), call, 1e-5,
                            1e-4);
}

// The blocks of d's plan on the AVX2 path (threads change only the slots).
ops::AttentionBlocking blocking_of(const posenc_attention_desc& d, int threads = 2) {
  return ops::plan_attention(ops::make_attention_problem(d), threads, POSENC_ISA_AVX2).blocking;
}

int64_t key_splits(const posenc_attention_desc& d, int threads) {
  return blocking_of(d, threads).key_splits;
}

class AttentionDecode : public IsaTest {};

// The longest keys: 18 ranges of 2 key blocks, the last of 185 keys (4097
// keys: 9 ranges of one 512-key block, the last of 1 key; 1031 keys: 3,
// the last of 7).
constexpr int64_t kLongKeys = 35001;

TEST_P(AttentionDecode, MatchesReference) {
  const int64_t kv_lens[] = {1, 2, 37, 1031, 4097, kLongKeys};
  for (size_t n = 0; n < std::size(kv_lens); ++n) {
    const int64_t kv = kv_lens[n];
    for (int64_t q : {1, 4}) {
      for (Bias bias : {Bias::none, Bias::absolute, Bias::clipped_1d, Bias::values_1d}) {
        for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
          // A decode step, one in the middle of the cache (later key ranges
          // see nothing), and all keys visible from offset 0.
          for (int step = 0; step < 3; ++step) {
            const int64_t offset = step == 0 ? kv - q : step == 1 ? kv / 3 : 0;
            const posenc_attention_desc d =
                decode_desc(q, kv, bias, offset, step < 2, (n + size_t(step)) % 2, dtype);
            SCOPED_TRACE(describe(d));
            // Every shape of 512 keys and more splits them.
            if (kv >= 512) {
              ASSERT_GT(key_splits(d, 2), 1);
            }
            const AttentionTensors call = decode_tensors(d);
            EXPECT_TRUE(matches(run(context(), call, true), call));
          }
        }
      }
    }
  }
}

// The ranges are fixed by the problem: the same bits at 1, 2 and 3 threads
// (4097 keys BTHD, the longest BHTD).
TEST_P(AttentionDecode, SameBitsAtAnyThreadCount) {
  for (int64_t kv : {int64_t(4097), kLongKeys}) {
    for (Bias bias : {Bias::none, Bias::absolute, Bias::clipped_1d, Bias::values_1d}) {
      for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
        const posenc_attention_desc d =
            decode_desc(4, kv, bias, kv - 4, true, kv != kLongKeys, dtype);
        SCOPED_TRACE(describe(d));
        for (int threads : {2, 3}) ASSERT_EQ(key_splits(d, threads), key_splits(d, 1));
        EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), decode_tensors(d)));
      }
    }
  }
}

// A NaN reaches the outputs through the merge of the key ranges as it does
// without them: a NaN in one query element (every score of its row NaN,
// whose range maxima are then -inf or NaN), and one in a key of a later
// range; the other heads' rows and the other queries stay finite.
TEST_P(AttentionDecode, NonFiniteInputsPropagateThroughTheMerge) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    const posenc_attention_desc d = decode_desc(3, 5000, Bias::none, 4997, true, false, dtype);
    SCOPED_TRACE(describe(d));
    ASSERT_GT(key_splits(d, 2), 1);
    AttentionTensors call = decode_tensors(d);
    call.values(Tensor::q)[size_t(1 * kDim + 5)] = kNaN;                  // head 0, query 1
    call.values(Tensor::k)[size_t((d.kv_len + 3000) * kDim + 2)] = kNaN;  // head 1's key 3000
    const std::vector<float> got = run(context(), call, true);
    const std::vector<double> want = reference::attention(d, call.reference());
    for (int64_t row = 0; row < kHeads * d.q_len; ++row) {
      const bool nan_row = row == 1 || row >= d.q_len;  // head 0 query 1, all of head 1
      for (int64_t c = 0; c < kDim; ++c) {
        const size_t at = size_t(row * kDim + c);
        ASSERT_EQ(std::isnan(want[at]), nan_row) << "the reference, row " << row;
        EXPECT_EQ(std::isnan(got[at]), nan_row) << "row " << row << " column " << c;
      }
    }
    EXPECT_TRUE(matches(got, call));
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionDecode);

TEST(AttentionDecodePlan, SplitsLongKeysOfFewQueryBlocks) {
  // B1 H8 decode: 8 tasks become 64, each head's keys 8 ranges of whole
  // 1024-key blocks (65536 keys), one block each (8192), or blocks of a
  // multiple of 256 keys (2048: 8 ranges of 256).
  posenc_attention_desc d = attention_desc(1, 8, 1, 65536, 128);
  const ops::AttentionBlocking longer = blocking_of(d);
  EXPECT_EQ(longer.key_splits, 8);
  EXPECT_EQ(longer.keys_per_split, 8192);
  EXPECT_EQ(longer.tasks, 64);
  d.kv_len = 8192;
  EXPECT_EQ(key_splits(d, 2), 8);
  d.kv_len = 2048;
  const ops::AttentionBlocking short_keys = blocking_of(d);
  EXPECT_EQ(short_keys.key_splits, 8);
  EXPECT_EQ(short_keys.keys_per_split, 256);
  EXPECT_EQ(short_keys.key_block, 256);
  // The fewest keys split: two ranges of 256.
  d.kv_len = 512;
  EXPECT_EQ(key_splits(d, 16), 2);
  // Past 1024 keys a range, whole 1024-key blocks: 70000 keys in 64 ranges
  // of 1094 are rounded to 2048 (35 ranges), not to 1280: the next range's
  // first block, at key 1280, would then have block index 1 (its first key
  // over 1024), the previous range's second block's, and start off the
  // blocks' grid.
  const ops::AttentionBlocking one_head = blocking_of(attention_desc(1, 1, 1, 70000, 64));
  EXPECT_EQ(one_head.keys_per_split, 2048);
  EXPECT_EQ(one_head.key_block, 1024);
  // Up to 16 queries.
  d = attention_desc(1, 1, 16, 70000, 64);
  EXPECT_GT(key_splits(d, 1), 1);
  // AttentionDecode's longest keys.
  const ops::AttentionBlocking longest = blocking_of(attention_desc(1, kHeads, 4, kLongKeys, kDim));
  EXPECT_EQ(longest.key_splits, 18);
  EXPECT_EQ(longest.keys_per_split, 2048);
}

// Grouped-query decoding on a short cache (B1 H32/8, 512 keys): the 4
// query heads of a kv head stacked, which reads each key once rather than 4
// times, and the keys split in 2 to make up the tasks (16). Unstacked and
// unsplit, a thread of 16 read two heads' keys, each of them 4 times over.
TEST(AttentionDecodePlan, StacksTheGroupOfAShortCacheAndSplitsItsKeys) {
  posenc_attention_desc d = attention_desc(1, 32, 1, 512, 128);
  d.kv_heads = 8;
  const ops::AttentionBlocking short_cache = blocking_of(d, 16);
  EXPECT_EQ(short_cache.stacked_heads, 4);
  EXPECT_EQ(short_cache.key_splits, 2);
  EXPECT_EQ(short_cache.keys_per_split, 256);
  EXPECT_EQ(short_cache.tasks, 16);
  // Too few keys to split (300): 4 heads stacked would leave 8 tasks of the
  // 32, 2 leave 16.
  d.kv_len = 300;
  EXPECT_EQ(blocking_of(d, 16).stacked_heads, 2);
}

// Under a sliding window the ranges split the window's keys, not the
// cache's: gpt-oss's window of 128 (64 query heads on 8, 4 stacked a task)
// is one range a task, over one or two 128-key blocks (4 ranges of 1024
// keys before, one of them computing a whole block); Mistral's 4096 over
// 32768 keys (32 on 8) 9 ranges of 512 from its first key block, 8 of them
// busy (8 of 4096 before, one busy).
TEST(AttentionDecodePlan, SplitsTheWindowNotTheCache) {
  const auto decode_step = [](int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim,
                              int64_t window) {
    posenc_attention_desc d = attention_desc(1, heads, 1, kv_len, head_dim);
    d.kv_heads = kv_heads;
    d.causal = 1;
    d.query_offset = kv_len - 1;
    d.sliding_window = window;
    return blocking_of(d, 16);
  };
  const ops::AttentionBlocking gpt_oss = decode_step(64, 8, 4096, 64, 128);
  EXPECT_EQ(gpt_oss.key_splits, 1);
  EXPECT_EQ(gpt_oss.key_block, 128);
  const ops::AttentionBlocking mistral = decode_step(32, 8, 32768, 128, 4096);
  EXPECT_EQ(mistral.stacked_heads, 4);
  EXPECT_EQ(mistral.key_splits, 9);
  EXPECT_EQ(mistral.keys_per_split, 512);
  EXPECT_EQ(mistral.key_block, 512);
}

// A query block's ranges, from the key block holding its first visible key,
// cover every key it computes, wherever the window falls on the key blocks:
// causal or not, 1, 5 and 16 queries, each offset from before the keys to
// past them.
TEST(AttentionDecodePlan, RangesCoverEveryWindow) {
  for (int causal : {1, 0}) {
    for (int64_t q_len : {1, 5, 16}) {
      for (int64_t window : {1, 100, 256, 513, 700, 1000, 1025, 1100, 2500, 4499}) {
        posenc_attention_desc d = attention_desc(1, 2, q_len, 4500, 16);
        d.causal = causal;
        d.sliding_window = window;
        const ops::AttentionProblem p = ops::make_attention_problem(d);
        const ops::AttentionBlocking b = ops::plan_attention(p, 2, POSENC_ISA_AVX2).blocking;
        SCOPED_TRACE(describe(d));
        ASSERT_EQ(b.query_blocks, 1);
        if (window >= 700) {
          EXPECT_GT(b.key_splits, 1);
        }
        for (int64_t offset = -window - q_len; offset <= d.kv_len; ++offset) {
          const ops::Sequence seq{d.kv_len, q_len, offset};
          const int64_t first =
              p.first_visible_key(seq, 0) / b.key_block * b.key_block;
          const int64_t end = ops::computed_keys(p, seq, 0, q_len);
          ASSERT_LE(end - first, b.key_splits * b.keys_per_split) << "offset " << offset;
        }
      }
    }
  }
}

TEST(AttentionDecodePlan, NeverSplitsOtherShapes) {
  EXPECT_EQ(key_splits(attention_desc(1, 8, 1, 511, 128), 16), 1);    // short keys
  EXPECT_EQ(key_splits(attention_desc(1, 8, 17, 65536, 128), 16), 1);  // prefill
  EXPECT_EQ(key_splits(attention_desc(8, 8, 1, 65536, 128), 16), 1);   // 64 heads
  posenc_attention_desc d = attention_desc(1, 1, 4, 4, 8);
  d.bias = POSENC_BIAS_RELATIVE_2D;
  d.map_height = d.map_width = 2;
  EXPECT_EQ(key_splits(d, 16), 1);
}

// The workspace holds every task's partial result: it grows with the keys'
// ranges, not with the thread count's share of them.
TEST(AttentionDecodePlan, WorkspaceHoldsThePartials) {
  const posenc_attention_desc d = attention_desc(1, 8, 16, 65536, 128);
  const ops::AttentionPlan plan =
      ops::plan_attention(ops::make_attention_problem(d), 1, POSENC_ISA_AVX2);
  ASSERT_TRUE(plan.blocking.splits_keys());
  EXPECT_GE(plan.workspace_bytes - plan.partials,
            size_t(plan.blocking.tasks) * 16 * (128 + 2) * sizeof(float));
}

// The merge weighs range i by exp(scale (m_i - M)): a range whose maximum
// lies more than ln 2^-64 / scale below the top gets weight 0, as the
// online softmax's corrections do, not a factor that makes its sum and
// output subnormal; one a little closer keeps its weight. (Partials of
// 1e20 make weights near 2^-64 = 5.4e-20 show in the result.)
TEST(AttentionDecodeMerge, WeightsBelowTwoToTheMinus64AreZero) {
  constexpr int64_t kColumns = 3;
  const ops::PartialLayout layout = ops::partial_layout(1, kColumns);
  std::vector<uint8_t> records(3 * layout.bytes + 64);
  uint8_t* base = records.data() + (64 - reinterpret_cast<uintptr_t>(records.data()) % 64) % 64;
  // Times scale 0.5: 0, -44.3 (weight 5.8e-20, kept), -44.4 (5.2e-20, 0).
  const float maxima[3] = {0.0f, -88.6f, -88.8f};
  const float sizes[3] = {1.0f, 1e20f, 1e20f};
  for (int64_t i = 0; i < 3; ++i) {
    const ops::Partial part = ops::partial_at(base, layout, i);
    part.row_max[0] = maxima[i];
    part.row_sum[0] = 2.0f * sizes[i];
    for (int64_t c = 0; c < kColumns; ++c) part.acc[c] = float(c + 1) * sizes[i];
  }
  float acc[kColumns], row_max = 1.0f, row_sum = 0.0f;
  ops::merge_partials(base, layout, 0, 3, 1, kColumns, kColumns, 0.5f, acc, &row_max, &row_sum);
  EXPECT_EQ(row_max, 0.0f);  // the top range's
  const double kept = 1e20 * std::exp(0.5 * -88.6);  // about 5.8
  EXPECT_NEAR(row_sum, 2.0 * (1.0 + kept), 1e-5 * row_sum);
  for (int64_t c = 0; c < kColumns; ++c) {
    EXPECT_NEAR(acc[c], double(c + 1) * (1.0 + kept), 1e-5 * acc[c]) << c;
  }
}

// Ranges whose scores were all NaN (maximum -inf or NaN, sum NaN) make
// their row NaN; a range that saw no key (sum 0) is left out whatever its
// acc holds (it is not written).
TEST(AttentionDecodeMerge, NaNRangesMakeTheirRowNaN) {
  constexpr int64_t kRows = 3, kColumns = 2;
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(),
                  kInf = std::numeric_limits<float>::infinity();
  const ops::PartialLayout layout = ops::partial_layout(kRows, kColumns);
  std::vector<uint8_t> records(2 * layout.bytes + 64);
  uint8_t* base = records.data() + (64 - reinterpret_cast<uintptr_t>(records.data()) % 64) % 64;
  // Range 0 saw keys in every row; range 1 saw only NaN scores (row 0, its
  // maximum -inf; row 1, NaN) or no key (row 2).
  const float maxima[kRows] = {-kInf, kNaN, -kInf}, sums[kRows] = {kNaN, kNaN, 0.0f};
  for (int64_t r = 0; r < kRows; ++r) {
    const ops::Partial first = ops::partial_at(base, layout, 0);
    first.row_max[r] = 1.0f;
    first.row_sum[r] = 2.0f;
    const ops::Partial second = ops::partial_at(base, layout, 1);
    second.row_max[r] = maxima[r];
    second.row_sum[r] = sums[r];
    for (int64_t c = 0; c < kColumns; ++c) {
      first.acc[r * kColumns + c] = 4.0f;
      second.acc[r * kColumns + c] = r == 2 ? kInf : kNaN;  // (row 2: never written)
    }
  }
  float acc[kRows * kColumns], row_max[kRows], row_sum[kRows];
  ops::merge_partials(base, layout, 0, 2, kRows, kColumns, kColumns, 0.5f, acc, row_max,
                      row_sum);
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(std::isnan(row_sum[r])) << r;
    for (int64_t c = 0; c < kColumns; ++c) EXPECT_TRUE(std::isnan(acc[r * kColumns + c])) << r;
  }
  EXPECT_EQ(row_max[2], 1.0f);
  EXPECT_EQ(row_sum[2], 2.0f);
  EXPECT_EQ(acc[4], 4.0f);
  EXPECT_EQ(acc[5], 4.0f);
}

}  // namespace
}  // namespace posenc::test
