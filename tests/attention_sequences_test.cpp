// Per-sequence kv_lengths, q_lengths and query_offsets of posenc_attention on
// every ISA path, fp32 and bf16: against the double reference loops, against
// each sequence run alone, bitwise at 1, 2 and 3 threads, and the errors.
#include <gtest/gtest.h>
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

// One call's inputs: q, k, v and the 1D tables (rounded to bf16 for bf16
// descs), the per-sequence tensors of the desc's index_type.
AttentionTensors call_of(const posenc_attention_desc& d, Sequences s) {
  AttentionTensors x(d, std::move(s));
  const auto add = [&](Tensor t, size_t count, uint32_t seed) {
    x.fill(t, count, seed * 977u + uint32_t(count));
  };
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  const int64_t rows = relative_rows(d, x.sequences().query_offsets);
  const int64_t table_rows = d.bias == POSENC_BIAS_ABSOLUTE ? d.kv_len : rows;
  add(Tensor::q, size_t(d.batch * d.heads * d.q_len * d.head_dim), 1);
  add(Tensor::k, size_t(d.batch * d.heads * d.kv_len * d.head_dim), 2);
  add(Tensor::v, size_t(d.batch * d.heads * d.kv_len * reference::value_head_dim_of(d)), 3);
  add(Tensor::table, d.bias == POSENC_BIAS_NONE ? 0 : size_t(heads * table_rows * d.head_dim), 4);
  add(Tensor::value_table, d.relative_values ? size_t(heads * rows * d.head_dim) : 0, 5);
  return x;
}

::testing::AssertionResult matches_reference(posenc_context* context,
                                             const AttentionTensors& call) {
  const posenc_attention_desc& d = call.desc();
  const std::vector<float> got = run(context, call, true);
  const std::vector<double> want = reference::attention(d, call.reference());
  // Rows past q_length are exact zeros (the reference leaves them 0).
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i] == 0.0 && got[i] != 0.0f) {
      return ::testing::AssertionFailure() << "element " << i << " = " << got[i]
                                           << " where the reference has an exact zero";
    }
  }
  return close_to_reference(got, want, call, 1e-5, 1e-4);
}

::testing::AssertionResult matches_reference(posenc_context* context,
                                             const posenc_attention_desc& d,
                                             const Sequences& s) {
  return matches_reference(context, call_of(d, s));
}

posenc_attention_desc with(posenc_attention_desc d, posenc_attention_layout layout,
                           posenc_dtype dtype) {
  d.layout = layout;
  d.dtype = dtype;
  return d;
}

posenc_attention_desc relative_1d(posenc_attention_desc d, int64_t max_distance, int per_head) {
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.max_distance = max_distance;
  d.tables_per_head = per_head;
  return d;
}

class AttentionSequences : public IsaTest {};

constexpr posenc_attention_layout kLayouts[] = {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD};
constexpr posenc_dtype kDtypes[] = {POSENC_F32, POSENC_BF16};

TEST_P(AttentionSequences, PaddedBatchWithLengthsZeroOneFullAndMixed) {
  for (posenc_attention_layout layout : kLayouts) {
    for (posenc_dtype dtype : kDtypes) {
      // Several query blocks per head (a block wholly past a length, one
      // partly), lengths not multiples of the key rounding.
      posenc_attention_desc d = with(attention_desc(6, 2, 300, 300, 16), layout, dtype);
      const Sequences lengths{{0, 1, 300, 37, 129, 264}, {0, 1, 300, 37, 129, 264}, {}};
      EXPECT_TRUE(matches_reference(context(), d, lengths));
      d.causal = 1;
      EXPECT_TRUE(matches_reference(context(), d, lengths));
      d.bias = POSENC_BIAS_ABSOLUTE;
      d.index_type = POSENC_INDEX_INT64;
      EXPECT_TRUE(matches_reference(context(), d, {{5, 300, 0, 299, 64, 65}, {}, {}}));
    }
  }
}

// A padded batch whose kv heads are packed (two query blocks read each)
// packs each sequence's own keys, in the layout of that many: values of 128
// columns are two column blocks of oneDNN's fp32 layout, the second after
// all of the first's rows (not where kv_len's layout has it).
TEST_P(AttentionSequences, ShortSequencesPackTheirOwnKeys) {
  for (posenc_dtype dtype : kDtypes) {
    posenc_attention_desc d =
        with(attention_desc(4, 2, 300, 300, 128), POSENC_LAYOUT_BTHD, dtype);
    const Sequences lengths{{37, 300, 129, 1}, {37, 300, 129, 1}, {}};
    EXPECT_TRUE(matches_reference(context(), d, lengths));
    d.causal = 1;
    EXPECT_TRUE(matches_reference(context(), d, lengths));
    // A 60-key problem whose sequences of up to 32 keys would take more
    // bytes in their own layout than the slot's (oneDNN 2.6's bf16 blocks
    // with AVX512-BF16): they keep kv_len's block.
    posenc_attention_desc small = with(attention_desc(3, 2, 60, 60, 16), POSENC_LAYOUT_BTHD, dtype);
    EXPECT_TRUE(matches_reference(context(), small, {{20, 60, 32}, {20, 60, 32}, {}}));
  }
}

TEST_P(AttentionSequences, LongKeysPastTheirLength) {
  // Key blocks of 1024 with the online softmax: lengths inside the first,
  // second and last block, and one at a block's end.
  posenc_attention_desc d = relative_1d(attention_desc(4, 2, 40, 2600, 8), 0, 1);
  EXPECT_TRUE(matches_reference(context(), d, {{2600, 1030, 5, 1024}, {}, {}}));
  d.relative_values = 1;
  d.max_distance = 300;
  EXPECT_TRUE(matches_reference(context(), d, {{2600, 1030, 5, 2048}, {40, 1, 0, 17}, {}}));
}

TEST_P(AttentionSequences, QueryLengthsAlone) {
  for (posenc_dtype dtype : kDtypes) {
    posenc_attention_desc d = with(attention_desc(4, 3, 70, 50, 32), POSENC_LAYOUT_BTHD, dtype);
    EXPECT_TRUE(matches_reference(context(), d, {{}, {0, 1, 70, 33}, {}}));
  }
}

TEST_P(AttentionSequences, OffsetsWithCausalAndRelativeBias) {
  for (posenc_attention_layout layout : kLayouts) {
    for (posenc_dtype dtype : kDtypes) {
      posenc_attention_desc d = with(attention_desc(4, 3, 37, 100, 8), layout, dtype);
      d.causal = 1;
      const Sequences offsets{{}, {}, {-3, 0, 17, 63}};
      EXPECT_TRUE(matches_reference(context(), d, offsets));
      for (int64_t clip : {0, 5}) {
        for (int per_head : {0, 1}) {
          EXPECT_TRUE(matches_reference(context(), relative_1d(d, clip, per_head), offsets));
        }
      }
      // Offsets, lengths and relative values together, not causal.
      posenc_attention_desc v = relative_1d(d, 0, 1);
      v.causal = 0;
      v.relative_values = 1;
      EXPECT_TRUE(
          matches_reference(context(), v, {{100, 7, 64, 0}, {37, 20, 1, 37}, {5, -40, 0, 90}}));
      v.max_distance = 9;
      EXPECT_TRUE(
          matches_reference(context(), v, {{100, 7, 64, 0}, {37, 20, 1, 37}, {5, -40, 0, 90}}));
    }
  }
}

// A sequence's keys and values past its length are padding (a cache's
// unwritten rows): NaN there must not reach the outputs, whatever the keys'
// rounding, packing or decode kernels read.
TEST_P(AttentionSequences, PaddingPastTheLengthsIsNeverRead) {
  const auto poison = [](AttentionTensors& call, Tensor x) {
    const posenc_attention_desc& d = call.desc();
    const int64_t kv_heads = d.kv_heads > 0 ? d.kv_heads : d.heads;
    const int64_t row = x == Tensor::v ? reference::value_head_dim_of(d) : d.head_dim;
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t h = 0; h < kv_heads; ++h) {
        for (int64_t t = call.sequences().kv_lengths[size_t(b)]; t < d.kv_len; ++t) {
          for (int64_t c = 0; c < row; ++c) {
            call.values(x)[size_t(
                reference::index_of(d, {}, kv_heads, d.kv_len, b, h, t, c, row))] =
                std::numeric_limits<float>::quiet_NaN();
          }
        }
      }
    }
  };
  for (posenc_attention_layout layout : kLayouts) {
    for (posenc_dtype dtype : kDtypes) {
      // Prefill (GEMMs, keys packed or read as stored), decode (its
      // kernels), long keys in blocks of 1024 and split across tasks with
      // GEMMs or decode kernels; grouped kv heads; values of 128 columns
      // (oneDNN's packed layout then has two blocks of columns).
      struct Shape {
        int64_t q_len, kv_len, value_head_dim;
        std::vector<int64_t> kv_lengths;
      };
      const Shape shapes[] = {{150, 300, 0, {300, 37, 129, 1}},
                              {150, 300, 128, {300, 37, 129, 1}},
                              {4, 300, 0, {0, 299, 64, 65}},
                              {1, 2600, 0, {2600, 1030, 5, 2047}},
                              {8, 2600, 0, {2600, 1030, 5, 2047}}};
      for (const Shape& shape : shapes) {
        for (int64_t kv_heads : {2, 1}) {
          posenc_attention_desc d =
              with(attention_desc(4, 2, shape.q_len, shape.kv_len, 64), layout, dtype);
          d.kv_heads = kv_heads;
          d.value_head_dim = shape.value_head_dim;
          for (int causal : {0, 1}) {
            d.causal = causal;
            const std::vector<int64_t> offsets(4, causal ? shape.kv_len - shape.q_len : 0);
            AttentionTensors call = call_of(d, {shape.kv_lengths, {}, offsets});
            poison(call, Tensor::k);
            poison(call, Tensor::v);
            EXPECT_TRUE(matches_reference(context(), call))
                << "q_len " << shape.q_len << " kv_len " << shape.kv_len << " kv_heads "
                << kv_heads << " causal " << causal << " layout " << layout << " dtype "
                << dtype;
          }
        }
      }
    }
  }
}

// A query block computes its rows up to its sequence's q_length rounded up
// to 32 (posenc/attention.h), never the whole block it ends in: the q rows
// past the last sequence's length plus 31 (all of them for length 0) are
// poisoned for AddressSanitizer, and the output is the same as without.
// BTHD, so that the tasks copy their q rows (a read the sanitizer sees;
// oneDNN's kernels are not instrumented): a 160-row block read whole reads
// poisoned rows for 37, 264 (the second block's) and 1. Without the
// sanitizer only the outputs are compared.
TEST_P(AttentionSequences, QueryRowsPastTheRoundedLengthAreNeverRead) {
  for (posenc_dtype dtype : kDtypes) {
    const posenc_attention_desc d =
        relative_1d(with(attention_desc(3, 2, 300, 300, 16), POSENC_LAYOUT_BTHD, dtype), 0, 1);
    for (int64_t last : {37, 264, 1, 0}) {
      const AttentionTensors call = call_of(d, {{}, {300, 129, last}, {}});
      const std::vector<float> whole = run(context(), call, false);
      const size_t element = dtype == POSENC_BF16 ? 2 : 4;
      const int64_t rows_read = last == 0 ? 0 : std::min(d.q_len, last + 31);
      const size_t readable =
          size_t(((d.batch - 1) * d.q_len + rows_read) * d.heads * d.head_dim) * element;
      const size_t bytes = size_t(d.batch * d.heads * d.q_len * d.head_dim) * element;
      posenc_attention_tensors t = call.tensors(nullptr);
      std::vector<unsigned char> q(static_cast<const unsigned char*>(t.q),
                                   static_cast<const unsigned char*>(t.q) + bytes);
      t.q = q.data();
      ASAN_POISON_MEMORY_REGION(q.data() + readable, bytes - readable);
      const std::vector<float> got = run(context(), call, t, false);
      ASAN_UNPOISON_MEMORY_REGION(q.data() + readable, bytes - readable);
      EXPECT_EQ(got, whole) << "last length " << last;
    }
  }
}

// Decode steps of different cache fills in one call: one query per sequence,
// each at its own offset, keys padded to the longest cache.
TEST_P(AttentionSequences, DecodeWithCachesOfDifferentFill) {
  posenc_attention_desc d = relative_1d(attention_desc(3, 4, 1, 300, 64), 64, 1);
  d.causal = 1;
  d.layout = POSENC_LAYOUT_BTHD;
  EXPECT_TRUE(matches_reference(context(), d, {{300, 1, 150}, {}, {299, 0, 149}}));
}

// Sequence b of a padded batch gives what it gives alone (an unpadded call
// of batch 1 and its own lengths): independent of the reference loops.
TEST_P(AttentionSequences, PaddedBatchMatchesEachSequenceAlone) {
  const int64_t heads = 2, length = 90, dim = 16;
  const std::vector<int64_t> lengths{90, 13, 64, 1};
  posenc_attention_desc d = attention_desc(4, heads, length, length, dim);
  d.causal = 1;
  const AttentionTensors batch = call_of(d, {lengths, lengths, {}});
  const std::vector<float> padded = run(context(), batch, true);
  const posenc_attention_tensors all = batch.tensors(nullptr);
  const size_t head = size_t(length * dim);
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t n = lengths[size_t(b)];
    std::vector<float> q, k, v;
    for (int64_t h = 0; h < heads; ++h) {
      const size_t at = size_t(b * heads + h) * head;
      const auto* qs = static_cast<const float*>(all.q) + at;
      const auto* ks = static_cast<const float*>(all.k) + at;
      const auto* vs = static_cast<const float*>(all.v) + at;
      q.insert(q.end(), qs, qs + n * dim);
      k.insert(k.end(), ks, ks + n * dim);
      v.insert(v.end(), vs, vs + n * dim);
    }
    posenc_attention_desc alone = attention_desc(1, heads, n, n, dim);
    alone.causal = 1;
    std::vector<float> out(q.size());
    const posenc_attention_tensors t{q.data(), k.data(), v.data(), nullptr, nullptr, nullptr,
                                     nullptr,  out.data(), nullptr, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr, nullptr};
    ASSERT_EQ(posenc_attention(context(), &alone, &t, nullptr, 0), POSENC_OK)
        << posenc_last_error();
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < length; ++i) {
        for (int64_t c = 0; c < dim; ++c) {
          const float got = padded[size_t(b * heads + h) * head + size_t(i * dim + c)];
          const float want = i < n ? out[size_t((h * n + i) * dim + c)] : 0.0f;
          ASSERT_NEAR(got, want, 1e-5) << "sequence " << b << " head " << h << " row " << i;
        }
      }
    }
  }
}

// The same bits at 1, 2 and 3 threads: the blocks, their rounded widths and
// the order of the sums follow the problem and the values, never the threads.
TEST_P(AttentionSequences, SameBitsAtAnyThreadCount) {
  for (posenc_dtype dtype : kDtypes) {
    posenc_attention_desc d = relative_1d(attention_desc(5, 3, 200, 200, 32), 7, 1);
    d.dtype = dtype;
    d.causal = 1;
    d.relative_values = 1;
    // And a padded batch whose sequences pack their own keys (BTHD, two
    // query blocks a head).
    const posenc_attention_desc packed =
        with(attention_desc(4, 2, 300, 300, 128), POSENC_LAYOUT_BTHD, dtype);
    EXPECT_TRUE(same_bits_at_1_to_3_threads(
        GetParam(), call_of(d, {{200, 3, 0, 121, 64}, {200, 3, 150, 121, 1}, {0, 2, -5, 0, 70}})))
        << "dtype " << dtype;
    EXPECT_TRUE(same_bits_at_1_to_3_threads(
        GetParam(), call_of(packed, {{37, 300, 129, 1}, {37, 300, 129, 1}, {}})))
        << "packed, dtype " << dtype;
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionSequences);

// --- errors: nothing written, the message names the argument.

class SequenceErrors : public ::testing::Test {
 protected:
  SequenceErrors() : call_(call_of(attention_desc(4, 2, 16, 512, 8), {{512, 0, 511, 7}, {}, {}})) {}

  ::testing::AssertionResult refused(posenc_attention_desc d, posenc_attention_tensors t,
                                     posenc_status want, const char* argument) {
    GuardedFloats out(size_t(4 * 2 * 16 * 8));
    t.out = out.data();
    const posenc_status got = posenc_attention(nullptr, &d, &t, nullptr, 0);
    if (!out.payload_untouched()) return ::testing::AssertionFailure() << "out was written";
    return fails_with(got, want, argument);
  }

  AttentionTensors call_;
};

TEST_F(SequenceErrors, LengthOutsideItsRangeNamesTheFirstBadIndex) {
  const posenc_attention_desc d = call_.desc();
  posenc_attention_tensors t = call_.tensors(nullptr);
  const int32_t long_kv[4] = {512, 1, 600, 700};
  t.kv_lengths = long_kv;
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "tensors->kv_lengths[2] = 600"));
  const int32_t negative[4] = {1, -1, 0, 0};
  t.kv_lengths = negative;
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "tensors->kv_lengths[1] = -1"));
  t.kv_lengths = nullptr;
  const int32_t long_q[4] = {16, 17, 0, 0};
  t.q_lengths = long_q;
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "tensors->q_lengths[1] = 17"));
  t.q_lengths = nullptr;
  const int64_t far[4] = {0, 0, 0, (int64_t(1) << 40) + 1};
  posenc_attention_desc wide = d;
  wide.index_type = POSENC_INDEX_INT64;
  t.query_offsets = far;
  EXPECT_TRUE(refused(wide, t, POSENC_ERROR_INVALID_ARGUMENT, "tensors->query_offsets[3]"));
}

TEST_F(SequenceErrors, IndexTypeAlignmentAndOffsetConflicts) {
  posenc_attention_desc d = call_.desc();
  posenc_attention_tensors t = call_.tensors(nullptr);
  store_enum(d.index_type, 7);
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "desc->index_type"));
  d.index_type = POSENC_INDEX_INT64;
  const int64_t lengths[5] = {1, 1, 1, 1, 1};
  t.kv_lengths = offset_bytes(lengths, 4);
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "tensors->kv_lengths"));
  d.index_type = POSENC_INDEX_INT32;
  t.kv_lengths = offset_bytes(lengths, 2);
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "tensors->kv_lengths"));
  t.kv_lengths = nullptr;
  const int32_t offsets[4] = {0, 1, 2, 3};
  t.query_offsets = offsets;
  d.query_offset = 5;
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_INVALID_ARGUMENT, "desc->query_offset"));
}

// The sizes are checked before the per-sequence values are read: a batch
// whose tensors cannot exist is refused without reading batch values
// (AddressSanitizer found the read in the fuzzer).
TEST_F(SequenceErrors, HugeBatchIsRefusedBeforeItsValuesAreRead) {
  posenc_attention_desc d = call_.desc();
  d.batch = int64_t(1) << 62;
  posenc_attention_tensors t = call_.tensors(nullptr);
  EXPECT_TRUE(refused(d, t, POSENC_ERROR_OVERFLOW, "tensors->q"));
}

TEST_F(SequenceErrors, OutOverlappingASequenceTensor) {
  const posenc_attention_desc d = call_.desc();
  posenc_attention_tensors t = call_.tensors(nullptr);
  std::vector<float> out(size_t(4 * 2 * 16 * 8) + 4);
  t.out = out.data();
  t.q_lengths = out.data() + 2;  // inside out; values read first are zeros
  std::fill(out.begin(), out.end(), 0.0f);
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d, &t, nullptr, 0), POSENC_ERROR_ALIASING,
                         "tensors->q_lengths"));
}

}  // namespace
}  // namespace posenc::test
