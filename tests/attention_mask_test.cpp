// The fused attention's additive mask on every ISA path, fp32 and bf16
// q/k/v, fp32 and bf16 masks, against the double reference loops: every
// broadcast shape, -inf entries and fully masked rows, with causal, every
// bias kind and both layouts, over several key blocks; thread-count
// independence; the errors of bad mask fields.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
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

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kF32Atol = 1e-5, kF32Rtol = 1e-4;

size_t mask_count(const posenc_attention_desc& d) {
  return size_t(d.mask_batch * d.mask_heads * d.mask_q_len * d.kv_len);
}

// Uniform values in [low, high), rounded to bf16 for a bf16 tensor (the
// reference sees what posenc sees).
std::vector<float> values(size_t count, uint32_t seed, posenc_dtype dtype, float low = -1.0f,
                          float high = 1.0f) {
  std::vector<float> x = random_floats(count, seed, low, high);
  if (dtype == POSENC_BF16) x = from_bf16(to_bf16(x));
  return x;
}

// A mask of finite values in [-3, 3) with about one entry in five -inf and,
// every `masked_row_period` rows (when non-zero), a row that is -inf
// throughout.
std::vector<float> random_mask(const posenc_attention_desc& d, uint32_t seed,
                               int64_t masked_row_period) {
  std::vector<float> m = values(mask_count(d), seed, d.mask_dtype, -3.0f, 3.0f);
  const std::vector<float> pick = random_floats(m.size(), seed + 1, 0.0f, 1.0f);
  for (size_t j = 0; j < m.size(); ++j) {
    if (pick[j] < 0.2f) m[j] = -kInf;
  }
  const size_t rows = m.size() / size_t(d.kv_len);
  for (size_t r = 0; masked_row_period > 0 && r < rows; r += size_t(masked_row_period)) {
    std::fill(m.begin() + long(r * size_t(d.kv_len)), m.begin() + long((r + 1) * size_t(d.kv_len)),
              -kInf);
  }
  return m;
}

// The inputs of one masked desc (rounded to bf16 for bf16 tensors).
AttentionTensors masked_inputs(const posenc_attention_desc& d, std::vector<float> mask) {
  AttentionTensors x(d);
  const size_t q = size_t(d.batch * d.heads * d.q_len * d.head_dim);
  const size_t kv = size_t(d.batch * d.heads * d.kv_len * d.head_dim);
  const size_t heads = size_t(d.tables_per_head ? d.heads : 1), dh = size_t(d.head_dim);
  x.fill(Tensor::q, q, 1);
  x.fill(Tensor::k, kv, 2);
  x.fill(Tensor::v, kv, 3);
  if (d.bias == POSENC_BIAS_ABSOLUTE) x.fill(Tensor::table, heads * size_t(d.kv_len) * dh, 4);
  if (d.bias == POSENC_BIAS_RELATIVE_1D) {
    x.fill(Tensor::table, heads * size_t(relative_rows(d)) * dh, 4);
  }
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    x.fill(Tensor::table_h, heads * size_t(2 * d.map_height - 1) * dh, 5);
    x.fill(Tensor::table_w, heads * size_t(2 * d.map_width - 1) * dh, 6);
  }
  if (d.relative_values) {
    x.fill(Tensor::value_table, heads * size_t(relative_rows(d)) * dh, 7);
  }
  x.set(Tensor::mask, std::move(mask));
  return x;
}

std::vector<double> reference_of(const AttentionTensors& inputs) {
  return reference::attention(inputs.desc(), inputs.reference());
}

::testing::AssertionResult matches_reference(posenc_context* context,
                                             const posenc_attention_desc& d,
                                             int64_t masked_row_period = 5) {
  const AttentionTensors inputs = masked_inputs(d, random_mask(d, 11, masked_row_period));
  const std::vector<float> got = run(context, inputs, false);
  return close_to_reference(got, reference_of(inputs), inputs, kF32Atol, kF32Rtol)
         << " [" << describe(d) << "]";
}

posenc_attention_desc masked(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                             int64_t head_dim, int64_t mask_batch, int64_t mask_heads,
                             int64_t mask_q_len, posenc_dtype mask_dtype = POSENC_F32) {
  posenc_attention_desc d = attention_desc(batch, heads, q_len, kv_len, head_dim);
  d.scale = 0.3f;  // not 1/sqrt(head_dim): the mask is not in the scores' units
  d.mask_batch = mask_batch;
  d.mask_heads = mask_heads;
  d.mask_q_len = mask_q_len;
  d.mask_dtype = mask_dtype;
  return d;
}

class AttentionMask : public IsaTest {};

// Swin's window period (6 items, 3 masks), one mask for all, one per item;
// per head or shared; per query or one row for all; fp32 and bf16 masks.
TEST_P(AttentionMask, EveryBroadcastShape) {
  const int64_t batch = 6, heads = 3, q_len = 37, kv_len = 53;
  for (posenc_dtype mask_dtype : {POSENC_F32, POSENC_BF16}) {
    for (int64_t mask_batch : {1, 3, 6}) {
      for (int64_t mask_heads : {int64_t(1), heads}) {
        for (int64_t mask_q_len : {int64_t(1), q_len}) {
          posenc_attention_desc d = masked(batch, heads, q_len, kv_len, 16, mask_batch,
                                           mask_heads, mask_q_len, mask_dtype);
          d.layout = mask_batch == 3 ? POSENC_LAYOUT_BTHD : POSENC_LAYOUT_BHTD;
          EXPECT_TRUE(matches_reference(context(), d, mask_q_len == 1 ? 0 : 5));
        }
      }
    }
  }
}

// The mask after every bias kind, with and without causal, both layouts.
TEST_P(AttentionMask, WithEveryBiasKindAndCausal) {
  for (int is_causal : {0, 1}) {
    for (posenc_attention_layout layout : {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD}) {
      SCOPED_TRACE(testing::Message() << "causal " << is_causal << " layout " << layout);
      posenc_attention_desc d = masked(2, 4, 30, 41, 8, 2, 4, 30);
      d.causal = is_causal;
      d.query_offset = is_causal ? 11 : 0;
      d.layout = layout;
      EXPECT_TRUE(matches_reference(context(), d));
      posenc_attention_desc absolute = d;
      absolute.bias = POSENC_BIAS_ABSOLUTE;
      absolute.tables_per_head = 1;
      absolute.mask_dtype = POSENC_BF16;
      EXPECT_TRUE(matches_reference(context(), absolute));
      posenc_attention_desc relative = d;
      relative.bias = POSENC_BIAS_RELATIVE_1D;
      relative.max_distance = 6;
      relative.mask_heads = 1;
      EXPECT_TRUE(matches_reference(context(), relative));
      relative.max_distance = 0;
      relative.relative_values = 1;
      relative.bias_uses_scaled_q = 0;
      EXPECT_TRUE(matches_reference(context(), relative));
      posenc_attention_desc map = masked(2, 2, 35, 35, 16, 1, 2, 35, POSENC_BF16);
      map.bias = POSENC_BIAS_RELATIVE_2D;
      map.map_height = 5;
      map.map_width = 7;
      map.causal = is_causal;
      map.layout = layout;
      EXPECT_TRUE(matches_reference(context(), map));
    }
  }
}

// 2600 keys: blocks of 1024, 1024 and 552 with the online softmax. Rows
// masked in the first block only, in the last only, everywhere but one key,
// and everywhere; every query block meets several of them.
TEST_P(AttentionMask, RowsMaskedInSomeKeyBlocks) {
  for (posenc_dtype mask_dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc d = masked(1, 2, 70, 2600, 8, 1, 2, 70, mask_dtype);
    d.bias = POSENC_BIAS_RELATIVE_1D;
    d.max_distance = 1500;
    std::vector<float> mask = random_mask(d, 21, 0);
    const auto fill = [&](int64_t row, int64_t first, int64_t last, float value) {
      const auto row_begin = mask.begin() + long(row * d.kv_len);
      std::fill(row_begin + long(first), row_begin + long(last), value);
    };
    for (int64_t row = 0; row < 2 * 70; row += 4) {
      switch (row / 4 % 4) {
        case 0: fill(row, 0, 1024, -kInf); break;           // the first block
        case 1: fill(row, 2048, 2600, -kInf); break;        // the last block
        case 2: fill(row, 0, 2600, -kInf); mask[size_t(row * d.kv_len + 1500)] = 0.5f; break;
        default: fill(row, 0, 2600, -kInf); break;          // all: zeros
      }
    }
    for (int is_causal : {0, 1}) {
      d.causal = is_causal;
      d.query_offset = is_causal ? 2530 : 0;
      const AttentionTensors inputs = masked_inputs(d, mask);
      const std::vector<float> got = run(context(), inputs, false);
      EXPECT_TRUE(all_close(got.data(), reference_of(inputs), kF32Atol, kF32Rtol))
          << describe(d);
      for (int64_t row = 12; row < 2 * 70; row += 16) {  // the fully masked rows
        for (int64_t c = 0; c < d.head_dim; ++c) {
          ASSERT_EQ(got[size_t(row * d.head_dim + c)], 0.0f) << "row " << row;
        }
      }
    }
  }
}

// A row whose every key is -inf gives zeros (not NaN), in fp32 and bf16 out.
TEST_P(AttentionMask, FullyMaskedRowsAreZero) {
  for (posenc_dtype out_dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc d = masked(2, 1, 9, 12, 8, 2, 1, 9);
    d.out_dtype = out_dtype;
    std::vector<float> mask(mask_count(d), 0.0f);
    std::fill(mask.begin() + 3 * 12, mask.begin() + 4 * 12, -kInf);  // item 0, query 3
    std::fill(mask.begin() + 9 * 12, mask.end(), -kInf);             // all of item 1
    const AttentionTensors inputs = masked_inputs(d, mask);
    const std::vector<float> got = run(context(), inputs, false);
    EXPECT_TRUE(close_to_reference(got, reference_of(inputs), inputs, kF32Atol, kF32Rtol));
    for (size_t i = 0; i < got.size(); ++i) {
      const bool zero = (i / 8 == 3) || i >= 9 * 8;
      if (zero) {
        ASSERT_EQ(got[i], 0.0f) << i;
      } else {
        ASSERT_TRUE(std::isfinite(got[i])) << i;
      }
    }
  }
}

// The mask is the softmax's input: with scale far from 1/sqrt(d), large
// finite entries (an ALiBi-like slope), scale <= 0 and tiny scales (none
// left to the softmax: 1 / 1e-40 overflows; once NaN rows), with the
// position logits from scale*q or q, out = softmax(scale q k^T + bias +
// mask) v still.
TEST_P(AttentionMask, MaskIsInSoftmaxInputUnits) {
  for (float scale : {0.05f, 3.0f, -0.5f, 0.0f, 1e-40f, 1e-30f, 0x1p-25f, 0x1p-24f}) {
    for (int scaled_q : {1, 0}) {
      posenc_attention_desc d = masked(1, 2, 20, 40, 16, 1, 2, 20);
      d.scale = scale;
      d.bias = POSENC_BIAS_RELATIVE_1D;
      d.bias_uses_scaled_q = scaled_q;
      std::vector<float> mask(mask_count(d));
      for (size_t r = 0; r < mask.size() / 40; ++r) {
        for (int64_t j = 0; j < 40; ++j) {
          mask[r * 40 + size_t(j)] = -0.75f * float(std::abs(int64_t(r % 20) - j));
        }
      }
      const AttentionTensors inputs = masked_inputs(d, mask);
      const std::vector<float> got = run(context(), inputs, false);
      EXPECT_TRUE(all_close(got.data(), reference_of(inputs), kF32Atol, kF32Rtol))
          << "scale " << scale << ", bias_uses_scaled_q " << scaled_q;
    }
  }
}

// attention.h: below scale 1, -FLT_MAX (torch.finfo.min) overflows to -inf
// when the mask is divided by scale, and masks as -inf does: the same
// outputs, a row masked everywhere zeros.
TEST_P(AttentionMask, LowestFloatMasksAsMinusInfinity) {
  posenc_attention_desc d = masked(1, 2, 20, 40, 16, 1, 2, 20);
  d.scale = 0.25f;
  std::vector<float> with_inf(mask_count(d), 0.0f), with_lowest(mask_count(d), 0.0f);
  for (size_t r = 0; r < with_inf.size() / 40; ++r) {
    for (int64_t j = 0; j < 40; ++j) {
      if (r % 20 == 7 || (j + int64_t(r)) % 3 == 0) {
        with_inf[r * 40 + size_t(j)] = -kInf;
        with_lowest[r * 40 + size_t(j)] = std::numeric_limits<float>::lowest();
      }
    }
  }
  const std::vector<float> want = run(context(), masked_inputs(d, with_inf), false);
  const std::vector<float> got = run(context(), masked_inputs(d, with_lowest), false);
  ASSERT_EQ(got, want);
  for (int64_t c = 0; c < 16; ++c) ASSERT_EQ(got[size_t(7 * 16 + c)], 0.0f) << c;
}

// attention.h: at scale 1 and above, and below 2^-24, the mask is not
// divided by scale and -FLT_MAX stays finite: a row masked everywhere by it
// weighs every key alike (the mean of v, as torch's fp32 softmax and the
// double reference give), and other rows weigh its keys 0.
TEST_P(AttentionMask, LowestFloatWhereTheMaskIsNotDivided) {
  for (float scale : {1.0f, 2.0f, 0x1p-25f}) {
    posenc_attention_desc d = masked(1, 2, 20, 40, 16, 1, 2, 20);
    d.scale = scale;
    std::vector<float> mask(mask_count(d), 0.0f);
    for (size_t r = 0; r < mask.size() / 40; ++r) {
      for (int64_t j = 0; j < 40; ++j) {
        if (r % 20 == 7 || (j + int64_t(r)) % 3 == 0) {
          mask[r * 40 + size_t(j)] = std::numeric_limits<float>::lowest();
        }
      }
    }
    const AttentionTensors inputs = masked_inputs(d, mask);
    const std::vector<float> got = run(context(), inputs, false);
    EXPECT_TRUE(all_close(got.data(), reference_of(inputs), kF32Atol, kF32Rtol))
        << "scale " << scale;
    const float* v = inputs.get(Tensor::v);  // head 0: [40, 16]
    for (int64_t c = 0; c < 16; ++c) {
      double mean = 0.0;
      for (int64_t j = 0; j < 40; ++j) mean += v[j * 16 + c] / 40.0;
      EXPECT_NEAR(got[size_t(7 * 16 + c)], mean, 1e-5) << "scale " << scale << ", column " << c;
    }
  }
}

// Scale 0 in bf16 with -inf in the mask and 63 keys (bf16 scores 64 apart,
// oneDNN's older gemm): softmax(mask) v, the same at 1 and 2 threads, with
// a kv head's keys packed once for two query heads. Its output scale of 0
// had left the scores unset: NaN heads on one thread.
TEST_P(AttentionMask, ScaleZeroBf16) {
  posenc_attention_desc d = masked(1, 2, 5, 63, 16, 1, 1, 1);
  d.dtype = POSENC_BF16;
  d.kv_heads = 1;
  d.scale = 0.0f;
  std::vector<float> mask(mask_count(d));
  for (size_t j = 0; j < mask.size(); ++j) mask[j] = j % 2 ? -kInf : 0.1f * float(j % 7);
  const AttentionTensors inputs = masked_inputs(d, mask);
  std::vector<float> first;
  for (int threads : {1, 2}) {
    const Context context(Isa(GetParam()), threads);
    const std::vector<float> got = run(context.get(), inputs, false);
    if (first.empty()) {
      first = got;
      EXPECT_TRUE(close_to_reference(got, reference_of(inputs), inputs, kF32Atol, kF32Rtol));
    } else {
      EXPECT_EQ(got, first) << threads << " threads";
    }
  }
}

TEST_P(AttentionMask, Bf16Inputs) {
  for (posenc_dtype mask_dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc d = masked(6, 2, 33, 47, 32, 3, 1, 33, mask_dtype);
    d.dtype = POSENC_BF16;
    d.bias = POSENC_BIAS_RELATIVE_1D;
    EXPECT_TRUE(matches_reference(context(), d));
    d.out_dtype = POSENC_BF16;
    d.causal = 1;
    d.query_offset = 14;
    EXPECT_TRUE(matches_reference(context(), d));
    posenc_attention_desc long_keys = masked(1, 2, 40, 2051, 16, 1, 1, 1, mask_dtype);
    long_keys.dtype = POSENC_BF16;
    long_keys.bias = POSENC_BIAS_ABSOLUTE;
    EXPECT_TRUE(matches_reference(context(), long_keys, 0));
  }
}

// The same bits on 1, 2 and 3 threads (the blocks follow the problem only),
// over several key blocks.
TEST_P(AttentionMask, ThreadCountIndependent) {
  posenc_attention_desc d = masked(3, 2, 50, 2300, 16, 3, 2, 50, POSENC_BF16);
  d.bias = POSENC_BIAS_RELATIVE_1D;
  const AttentionTensors inputs = masked_inputs(d, random_mask(d, 31, 7));
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    const Context context(Isa(GetParam()), threads);
    const std::vector<float> got = run(context.get(), inputs, false);
    if (first.empty()) {
      first = got;
      EXPECT_TRUE(all_close(got.data(), reference_of(inputs), kF32Atol, kF32Rtol));
    } else {
      ASSERT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
          << threads << " threads";
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionMask);

// The mask is read in place: the workspace does not grow with it.
TEST(AttentionMaskWorkspace, SameAsWithoutMask) {
  const Context context(Isa::automatic, 2);
  posenc_attention_desc d = masked(4, 8, 2048, 2048, 64, 4, 8, 2048);
  const size_t with_mask = attention_workspace_size(context, d);
  d.mask_batch = 0;
  EXPECT_EQ(with_mask, attention_workspace_size(context, d));
}

// Bad mask fields and tensors: INVALID_ARGUMENT (or NULL_POINTER, OVERFLOW,
// ALIASING) naming the field, and nothing written.
class AttentionMaskErrors : public ::testing::Test {
 protected:
  static constexpr int64_t kBatch = 4, kHeads = 2, kT = 5, kD = 4;
  static constexpr int64_t kCount = kBatch * kHeads * kT * kD;

  AttentionMaskErrors()
      : q_(random_floats(kCount, 1)), mask_(size_t(kBatch * kHeads * kT * kT) + 1), out_(kCount) {
    reset();
  }

  void reset() {
    d_ = masked(kBatch, kHeads, kT, kT, kD, 2, kHeads, kT);
    t_ = posenc_attention_tensors{};
    t_.q = t_.k = t_.v = q_.data();
    t_.out = out_.data();
    t_.mask = mask_.data();
  }

  ::testing::AssertionResult rejects(posenc_status want, const char* argument) {
    ::testing::AssertionResult result =
        fails_with(posenc_attention(nullptr, &d_, &t_, nullptr, 0), want, argument);
    if (result && !out_.payload_untouched()) {
      result = ::testing::AssertionFailure() << "out written";
    }
    reset();
    return result;
  }

  std::vector<float> q_, mask_;
  GuardedFloats out_;
  posenc_attention_desc d_;
  posenc_attention_tensors t_;
};

TEST_F(AttentionMaskErrors, ValidCallsWork) {
  for (int64_t mask_batch : {1, 2, 4}) {
    d_.mask_batch = mask_batch;
    ASSERT_EQ(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_OK) << posenc_last_error();
  }
  // A bf16 mask needs 2-byte alignment only.
  d_.mask_dtype = POSENC_BF16;
  t_.mask = offset_bytes(mask_.data(), 2);
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_OK) << posenc_last_error();
  t_.mask = mask_.data();
  d_.mask_batch = 0;  // no mask: the other mask fields are not read
  d_.mask_heads = -3;
  store_enum(d_.mask_dtype, 77);
  t_.mask = nullptr;
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_OK) << posenc_last_error();
}

TEST_F(AttentionMaskErrors, Fields) {
  for (int64_t bad : {-1, 3, 5, 8}) {
    d_.mask_batch = bad;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->mask_batch")) << bad;
  }
  for (int64_t bad : {0, 3, -1}) {
    d_.mask_heads = bad;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->mask_heads")) << bad;
  }
  for (int64_t bad : {int64_t(0), int64_t(2), kT + 1}) {
    d_.mask_q_len = bad;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->mask_q_len")) << bad;
  }
  store_enum(d_.mask_dtype, 7);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->mask_dtype"));
  store_enum(d_.mask_dtype, -1);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->mask_dtype"));
}

TEST_F(AttentionMaskErrors, Tensor) {
  t_.mask = nullptr;
  EXPECT_TRUE(rejects(POSENC_ERROR_NULL_POINTER, "tensors->mask"));
  d_.mask_batch = 0;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->mask"));
  t_.mask = offset_bytes(mask_.data(), 2);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->mask"));
  t_.mask = offset_bytes(mask_.data(), 1);
  d_.mask_dtype = POSENC_BF16;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->mask"));
  // out over the mask.
  t_.out = mask_.data();
  EXPECT_TRUE(rejects(POSENC_ERROR_ALIASING, "tensors->mask"));
  // A mask whose size overflows (kv_len large, mask_q_len = q_len large).
  d_ = masked(1, int64_t(1) << 20, int64_t(1) << 22, int64_t(1) << 22, 1, 1, int64_t(1) << 20,
              int64_t(1) << 22);
  EXPECT_TRUE(rejects(POSENC_ERROR_OVERFLOW, "tensors->mask"));
}

}  // namespace
}  // namespace posenc::test
