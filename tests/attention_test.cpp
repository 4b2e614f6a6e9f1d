// Fused attention and the bottleneck block on every ISA path, fp32 and bf16,
// against the double reference loops.
#include "reference/attention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

constexpr double kF32Atol = 1e-5, kF32Rtol = 1e-4;

// The elements a tensor of `heads` heads and `tokens` tokens of row_size
// (0: head_dim) spans.
size_t extent(const posenc_attention_desc& d, const posenc_token_strides& s, int64_t heads,
              int64_t tokens, int64_t row_size = 0) {
  return size_t(reference::extent_of(d, s, heads, tokens, row_size));
}

// Uniform values in [-1, 1), rounded to bf16 when the call takes bf16 (so
// that the reference sees exactly what posenc sees).
std::vector<float> values(size_t count, uint32_t seed, posenc_dtype dtype) {
  std::vector<float> x = random_floats(count, seed);
  if (dtype == POSENC_BF16) x = from_bf16(to_bf16(x));
  return x;
}

// The inputs of one desc. With packed_qkv (a desc of posenc::packed_qkv_desc),
// q, k and v are the three views of one buffer.
AttentionTensors inputs_of(const posenc_attention_desc& d, bool packed_qkv = false) {
  AttentionTensors x(d);
  const auto add = [&](Tensor t, size_t count, uint32_t salt) {
    x.fill(t, count, salt * 7919u + uint32_t(count));
  };
  const int64_t kv_heads = reference::kv_heads_of(d);
  const size_t heads = size_t(d.tables_per_head ? d.heads : 1), dh = size_t(d.head_dim);
  const int64_t dv = reference::value_head_dim_of(d);
  if (packed_qkv) {
    const PackedQkv packed = posenc::packed_qkv(d.q_len, d.heads, kv_heads, d.head_dim);
    add(Tensor::q, size_t(packed.v_offset) + extent(d, d.v_strides, kv_heads, d.kv_len, dv), 1);
    x.view(Tensor::k, Tensor::q, size_t(packed.k_offset));
    x.view(Tensor::v, Tensor::q, size_t(packed.v_offset));
  } else {
    add(Tensor::q, extent(d, d.q_strides, d.heads, d.q_len), 1);
    add(Tensor::k, extent(d, d.k_strides, kv_heads, d.kv_len), 2);
    add(Tensor::v, extent(d, d.v_strides, kv_heads, d.kv_len, dv), 3);
  }
  if (d.bias == POSENC_BIAS_ABSOLUTE) add(Tensor::table, heads * size_t(d.kv_len) * dh, 4);
  if (d.bias == POSENC_BIAS_RELATIVE_1D) {
    add(Tensor::table, heads * size_t(relative_rows(d)) * dh, 4);
  }
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    add(Tensor::table_h, heads * size_t(2 * d.map_height - 1) * dh, 5);
    add(Tensor::table_w, heads * size_t(2 * d.map_width - 1) * dh, 6);
  }
  if (d.relative_values) {
    add(Tensor::value_table, heads * size_t(relative_rows(d)) * size_t(dv), 7);
  }
  return x;
}

// The reference of a desc, computed once per test binary (every ISA path
// compares against the same result).
const std::vector<double>& reference_for(const posenc_attention_desc& d) {
  static std::map<std::string, std::vector<double>> cache;
  const std::string key = describe(d);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, reference::attention(d, inputs_of(d).reference())).first;
  }
  return it->second;
}

::testing::AssertionResult close_enough(const std::vector<float>& got,
                                        const std::vector<double>& want,
                                        const AttentionTensors& inputs) {
  return close_to_reference(got, want, inputs, kF32Atol, kF32Rtol)
         << " [" << describe(inputs) << "]";
}

::testing::AssertionResult matches_reference(posenc_context* context,
                                             const posenc_attention_desc& d,
                                             bool with_workspace = false) {
  const AttentionTensors inputs = inputs_of(d);
  return close_enough(run(context, inputs, with_workspace), reference_for(d), inputs);
}

// The same for inputs a test made or changed, against the reference of these
// inputs.
::testing::AssertionResult matches_reference(posenc_context* context,
                                             const posenc_attention_desc& d,
                                             const AttentionTensors& inputs) {
  return close_enough(run(context, inputs, false), reference::attention(d, inputs.reference()),
                      inputs);
}

posenc_attention_desc desc(int64_t heads, int64_t q_len, int64_t kv_len, int64_t head_dim,
                           int64_t batch = 1) {
  return attention_desc(batch, heads, q_len, kv_len, head_dim);
}

// q, k and v as strided views of one packed buffer of kv_len tokens per
// batch item (the queries its first q_len), out dense in out_layout: the
// strides of packed_qkv_desc, for decode-sized q_len too.
posenc_attention_desc packed_views(posenc_attention_desc d, posenc_attention_layout out_layout) {
  const PackedQkv packed =
      posenc::packed_qkv(d.kv_len, d.heads, reference::kv_heads_of(d), d.head_dim);
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.k_strides = d.v_strides = packed.strides;
  d.out_strides = dense_strides(out_layout, d.heads, d.q_len, d.head_dim);
  return d;
}

posenc_attention_desc relative_1d(posenc_attention_desc d, int64_t max_distance,
                                  int per_head) {
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.max_distance = max_distance;
  d.tables_per_head = per_head;
  return d;
}

posenc_attention_desc relative_2d(int64_t heads, int64_t height, int64_t width,
                                  int64_t head_dim, int per_head, int64_t batch = 1) {
  posenc_attention_desc d = desc(heads, height * width, height * width, head_dim, batch);
  d.bias = POSENC_BIAS_RELATIVE_2D;
  d.map_height = height;
  d.map_width = width;
  d.tables_per_head = per_head;
  return d;
}

posenc_attention_desc as_bf16(posenc_attention_desc d, posenc_dtype out = POSENC_F32) {
  d.dtype = POSENC_BF16;
  d.out_dtype = out;
  return d;
}

posenc_attention_desc causal(posenc_attention_desc d, int64_t offset = 0) {
  d.causal = 1;
  d.query_offset = offset;
  return d;
}

class Attention : public IsaTest {};

TEST_P(Attention, Relative1dSequences) {
  struct Shape {
    int64_t t, heads, d;
  };
  for (const Shape s : {Shape{1, 1, 8}, Shape{5, 4, 8}, Shape{64, 4, 64}, Shape{257, 1, 128},
                        Shape{1030, 1, 8}}) {
    for (int is_causal : {0, 1}) {
      posenc_attention_desc d = relative_1d(desc(s.heads, s.t, s.t, s.d), 0, s.heads > 1);
      d.causal = is_causal;
      d.layout = s.t % 2 ? POSENC_LAYOUT_BTHD : POSENC_LAYOUT_BHTD;
      EXPECT_TRUE(matches_reference(context(), d));
    }
  }
}

TEST_P(Attention, Relative1dClippedAndUnequalLengths) {
  // Fewer queries than keys, decoding in the middle of a cache, clipped.
  EXPECT_TRUE(matches_reference(context(), causal(relative_1d(desc(4, 37, 100, 8, 2), 16, 1), 63)));
  // More queries than keys, unclipped table of Tq+Tk-1 rows.
  EXPECT_TRUE(matches_reference(context(), relative_1d(desc(1, 100, 37, 64), 0, 0)));
  // Clipped, the distances reach past K on both sides, per-head tables.
  EXPECT_TRUE(matches_reference(context(), relative_1d(desc(4, 70, 70, 8), 5, 1)));
}

TEST_P(Attention, DecodeOneQuery) {
  for (int64_t k : {0, 64}) {
    posenc_attention_desc d = causal(relative_1d(desc(4, 1, 300, 64, 2), k, 1), 299);
    d.layout = POSENC_LAYOUT_BTHD;
    EXPECT_TRUE(matches_reference(context(), d));
  }
  // Decoding where the newest key lies in the middle of the cache.
  EXPECT_TRUE(matches_reference(context(), causal(relative_1d(desc(1, 1, 50, 8), 8, 0), 20)));
}

// A causal decode step (one query at position T-1, the full sequence's
// [2T-1, d] table per head) gives the last row of the full computation: an
// independent check of the table's row count, which is also the stride of
// per-head tables (posenc_attention read them T rows apart before 0.2).
TEST_P(Attention, DecodeStepIsLastRowOfFullSequence) {
  const int64_t heads = 3, length = 40, dim = 16;
  const auto q = random_floats(size_t(heads * length * dim), 90);
  const auto kv = random_floats(size_t(heads * length * dim), 91);
  const auto table = random_floats(size_t(heads * (2 * length - 1) * dim), 92);
  const posenc_attention_desc full = causal(relative_1d(desc(heads, length, length, dim), 0, 1));
  std::vector<float> full_out(q.size()), last_q(size_t(heads * dim)), step_out(last_q.size());
  const posenc_attention_tensors full_t{q.data(), kv.data(), kv.data(), table.data(),
                                        nullptr,  nullptr,   nullptr,   full_out.data(),
                                        nullptr,  nullptr,   nullptr,   nullptr,
                                        nullptr, nullptr, nullptr, nullptr};
  ASSERT_EQ(posenc_attention(context(), &full, &full_t, nullptr, 0), POSENC_OK)
      << posenc_last_error();
  for (int64_t h = 0; h < heads; ++h) {
    std::memcpy(&last_q[size_t(h * dim)], &q[size_t(((h + 1) * length - 1) * dim)],
                size_t(dim) * sizeof(float));
  }
  const posenc_attention_desc step =
      causal(relative_1d(desc(heads, 1, length, dim), 0, 1), length - 1);
  const posenc_attention_tensors step_t{last_q.data(), kv.data(), kv.data(), table.data(),
                                        nullptr,       nullptr,   nullptr,   step_out.data(),
                                        nullptr,       nullptr,   nullptr,   nullptr,
                                        nullptr, nullptr, nullptr, nullptr};
  ASSERT_EQ(posenc_attention(context(), &step, &step_t, nullptr, 0), POSENC_OK)
      << posenc_last_error();
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t c = 0; c < dim; ++c) {
      EXPECT_NEAR(step_out[size_t(h * dim + c)],
                  full_out[size_t(((h + 1) * length - 1) * dim + c)], 1e-5)
          << "head " << h << " column " << c;
    }
  }
}

TEST_P(Attention, LongKeysUseOnlineSoftmax) {
  // 2600 keys: key blocks of 1024, 1024 and 552 with the online softmax.
  posenc_attention_desc d = relative_1d(desc(1, 70, 2600, 8), 1500, 0);
  EXPECT_TRUE(matches_reference(context(), d));
  EXPECT_TRUE(matches_reference(context(), causal(d, 2530)));
  d.relative_values = 1;
  d.max_distance = 0;
  EXPECT_TRUE(matches_reference(context(), causal(d, 2000)));
}

TEST_P(Attention, NoBiasAndAbsolute) {
  EXPECT_TRUE(matches_reference(context(), desc(4, 33, 33, 8, 2)));
  EXPECT_TRUE(matches_reference(context(), causal(desc(1, 20, 45, 128), 25)));
  for (int per_head : {0, 1}) {
    posenc_attention_desc d = desc(4, 70, 70, 64);
    d.bias = POSENC_BIAS_ABSOLUTE;
    d.tables_per_head = per_head;
    d.causal = per_head;
    EXPECT_TRUE(matches_reference(context(), d));
  }
}

TEST_P(Attention, UnscaledPositionLogits) {
  posenc_attention_desc d = relative_1d(desc(4, 40, 40, 8), 0, 1);
  d.bias_uses_scaled_q = 0;
  EXPECT_TRUE(matches_reference(context(), d));
  d = relative_2d(1, 3, 7, 8, 0);
  d.bias_uses_scaled_q = 0;
  d.scale = 0.7f;
  EXPECT_TRUE(matches_reference(context(), d));
}

TEST_P(Attention, RelativeValues) {
  posenc_attention_desc d = relative_1d(desc(4, 50, 50, 8), 3, 1);
  d.relative_values = 1;
  EXPECT_TRUE(matches_reference(context(), d));
  EXPECT_TRUE(matches_reference(context(), causal(d, 0)));
  posenc_attention_desc values_only = desc(1, 30, 77, 64);
  values_only.relative_values = 1;
  EXPECT_TRUE(matches_reference(context(), values_only));
}

TEST_P(Attention, Relative2dMaps) {
  struct Map {
    int64_t x, y, heads, d;
  };
  for (const Map m : {Map{1, 1, 1, 8}, Map{3, 7, 4, 8}, Map{7, 3, 1, 64}, Map{14, 14, 4, 64},
                      Map{24, 40, 1, 8}, Map{32, 32, 1, 16}}) {
    EXPECT_TRUE(matches_reference(context(), relative_2d(m.heads, m.x, m.y, m.d, m.heads > 1)));
  }
  EXPECT_TRUE(matches_reference(context(), causal(relative_2d(4, 3, 7, 128, 0, 2))));
}

TEST_P(Attention, FullyMaskedRowsAreZero) {
  // Queries at positions -5 .. 14 against 10 keys: the first 5 see nothing.
  posenc_attention_desc d = causal(relative_1d(desc(2, 20, 10, 8), 4, 0), -5);
  EXPECT_TRUE(matches_reference(context(), d));
  AttentionTensors inputs = inputs_of(d);
  const std::vector<float> got = run(context(), inputs, false);
  for (size_t i = 0; i < size_t(5 * 8); ++i) ASSERT_EQ(got[i], 0.0f) << i;
  // Every query before every key.
  EXPECT_TRUE(matches_reference(context(), causal(desc(1, 8, 10, 8), -30)));
}

TEST_P(Attention, NonFiniteInputsPropagate) {
  posenc_attention_desc d = relative_1d(desc(1, 16, 16, 8), 0, 0);
  AttentionTensors inputs = inputs_of(d);
  inputs.values(Tensor::q)[3 * 8 + 2] = std::numeric_limits<float>::quiet_NaN();  // query 3
  inputs.values(Tensor::v)[5 * 8 + 1] = std::numeric_limits<float>::infinity();  // key 5, col 1
  const std::vector<float> got = run(context(), inputs, false);
  for (int64_t i = 0; i < 16; ++i) {
    for (int64_t c = 0; c < 8; ++c) {
      const float x = got[size_t(i * 8 + c)];
      if (i == 3) {
        EXPECT_TRUE(std::isnan(x)) << i << "," << c;
      } else if (c == 1) {
        EXPECT_EQ(x, std::numeric_limits<float>::infinity()) << i;
      } else {
        EXPECT_TRUE(std::isfinite(x)) << i << "," << c;
      }
    }
  }
}

// Logits of order 1e30 (far past exp's range) still give an exact, stable
// softmax: the largest logit takes all the weight, nothing overflows to NaN.
TEST_P(Attention, HugeLogitsStaySoftmaxStable) {
  posenc_attention_desc d = relative_1d(desc(1, 4, 6, 8), 0, 0);
  AttentionTensors inputs = inputs_of(d);
  std::vector<float>& q = inputs.values(Tensor::q);
  std::vector<float>& k = inputs.values(Tensor::k);
  for (int64_t c = 0; c < 8; ++c) q[c] = c == 0 ? 1e15f : 0.0f;  // query 0
  for (int64_t j = 0; j < 6; ++j) k[j * 8] = float(j) * 1e15f;   // logit ~ j * 1e30
  const std::vector<float> got = run(context(), inputs, false);
  for (int64_t c = 0; c < 8; ++c) {
    EXPECT_EQ(got[size_t(c)], inputs.values(Tensor::v)[5 * 8 + c]) << c;  // all weight on key 5
  }
  for (float x : got) EXPECT_TRUE(std::isfinite(x));
}

TEST_P(Attention, CallerWorkspace) {
  EXPECT_TRUE(matches_reference(context(), relative_1d(desc(4, 64, 64, 64), 0, 1), true));
  EXPECT_TRUE(matches_reference(context(), relative_2d(4, 14, 14, 64, 0), true));
  posenc_attention_desc d = relative_1d(desc(1, 70, 2600, 8), 1500, 0);
  d.relative_values = 1;
  EXPECT_TRUE(matches_reference(context(), d, true));
}

TEST_P(Attention, Bf16) {
  EXPECT_TRUE(matches_reference(context(), as_bf16(relative_1d(desc(4, 257, 257, 64), 0, 1))));
  EXPECT_TRUE(matches_reference(
      context(), as_bf16(causal(relative_1d(desc(4, 1, 300, 128, 2), 64, 0), 299), POSENC_BF16)));
  EXPECT_TRUE(matches_reference(context(), as_bf16(relative_2d(4, 14, 14, 64, 1), POSENC_BF16)));
  EXPECT_TRUE(matches_reference(context(), as_bf16(relative_2d(1, 3, 7, 8, 0))));
  EXPECT_TRUE(matches_reference(context(), as_bf16(relative_1d(desc(1, 5, 5, 8), 0, 0))));
  posenc_attention_desc d = relative_1d(desc(1, 70, 2600, 8), 1500, 0);
  d.relative_values = 1;
  EXPECT_TRUE(matches_reference(context(), as_bf16(causal(d, 2530))));
  // Query blocks of 20 against 60 keys: the GEMM shapes (m <= 32, 49 <= n <=
  // 63) on which oneDNN 2.6.3's AMX bf16 matmul fails with dense outputs.
  d = desc(4, 40, 60, 64);
  d.bias = POSENC_BIAS_ABSOLUTE;
  EXPECT_TRUE(matches_reference(context(), as_bf16(d, POSENC_BF16), true));
  // Heads of 63 and blocks of 63 keys: a depth oneDNN 2.6.3's AMX bf16
  // matmul runs into an illegal instruction (at 65 query rows among many
  // others), which posenc's GEMMs pad to 64 (runtime/matmul.hpp). Last, 2 kv
  // heads as strided views, as a fuzzer drew it.
  EXPECT_TRUE(matches_reference(context(), as_bf16(desc(8, 65, 7, 63))));
  EXPECT_TRUE(matches_reference(context(), as_bf16(relative_1d(desc(2, 65, 130, 63), 0, 1))));
  EXPECT_TRUE(matches_reference(context(), as_bf16(desc(2, 65, 63, 64), POSENC_BF16)));
  d = relative_1d(desc(2, 130, 2048 + 63, 8), 0, 1);
  EXPECT_TRUE(matches_reference(context(), as_bf16(causal(d, 2048 + 63 - 130))));
  d = desc(4, 70, 5, 63, 3);
  d.kv_heads = 2;
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.v_strides = dense_strides(POSENC_LAYOUT_BTHD, 4, 70, 63);
  d.k_strides = dense_strides(POSENC_LAYOUT_BHTD, 2, 5, 63);
  d.out_strides = dense_strides(POSENC_LAYOUT_BHTD, 4, 70, 63);
  EXPECT_TRUE(matches_reference(context(), as_bf16(d)));
}

// Rows of more than 2048 keys go in key blocks of 1024 with the online
// softmax; here last blocks of 1, 3 and 1 keys, in heads of three query
// blocks, whose keys and values are packed once for all of them. oneDNN may
// read a short last block as stored while it packs the others (it does with
// the AVX2 cap: the suite's second run).
TEST_P(Attention, ShortLastKeyBlock) {
  for (int64_t kv_len : {2049, 2051, 3073}) {
    const posenc_attention_desc d = relative_1d(desc(2, 130, kv_len, 8), 0, 1);
    EXPECT_TRUE(matches_reference(context(), d));
    EXPECT_TRUE(matches_reference(context(), causal(d, kv_len - 130)));
    EXPECT_TRUE(matches_reference(context(), as_bf16(d)));
    EXPECT_TRUE(matches_reference(context(), as_bf16(causal(d, kv_len - 130), POSENC_BF16)));
  }
}

// Every key reaches the output, in bf16 too, where the suite's tolerance
// (kBf16AttentionTol) would not see one key of thousands lost: value row j
// is one-hot at channel j % 64, so output channel c is the sum of the
// probabilities of the visible keys j = c (mod 64), about keys / 64 nearly
// equal ones (q is small). A key lost or counted twice moves its channel by
// about 64 / keys of it (2% at 3073 keys), 2.6 times the check, 2^-7 of
// each channel, which is twice what the probabilities' rounding to bf16
// (2^-8 relative) may; a channel no visible key reaches must be exactly 0.
// Decode steps (3 rows) and query blocks (130 rows); key blocks of up to
// 2048 keys, then of 1024 with a short last one; all keys, causal (each row
// a prefix of its own), and per-sequence key counts (a batch of two: 37 keys
// short, and 45 keys, which reach channels 0-44 only).
TEST_P(Attention, Bf16EveryKeyReachesTheOutput) {
  constexpr int64_t kHeads = 2, kDim = 64, kBatch = 2;
  enum class Keys { all, causal, per_sequence };
  for (Keys keys : {Keys::all, Keys::causal, Keys::per_sequence}) {
    for (int64_t q_len : {3, 130}) {
      for (int64_t kv_len : {257, 1025, 2049, 3073}) {
        posenc_attention_desc d = as_bf16(desc(kHeads, q_len, kv_len, kDim, kBatch));
        if (keys == Keys::causal) d = causal(d, kv_len - q_len);
        Sequences s;
        if (keys == Keys::per_sequence) s.kv_lengths = {kv_len - 37, 45};
        AttentionTensors x(d, s);
        const size_t tokens = size_t(kBatch * kHeads * kv_len);
        x.fill(Tensor::q, size_t(kBatch * kHeads * q_len * kDim), 11, -0.25f, 0.25f);
        x.fill(Tensor::k, tokens * size_t(kDim), 12);
        std::vector<float> v(tokens * size_t(kDim), 0.0f);
        for (size_t token = 0; token < tokens; ++token) {
          v[token * size_t(kDim) + token % size_t(kv_len) % size_t(kDim)] = 1.0f;
        }
        x.set(Tensor::v, std::move(v));
        const std::vector<float> got = run(context(), x, false);
        const std::vector<double> want = reference::attention(d, x.reference());
        double worst = 0.0;
        size_t nonzero_where_none = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          if (want[i] == 0.0) {
            nonzero_where_none += got[i] != 0.0f;
          } else {
            worst = std::max(worst, std::abs(double(got[i]) - want[i]) / want[i]);
          }
        }
        SCOPED_TRACE(testing::Message()
                     << "keys " << int(keys) << ", q_len " << q_len << ", kv_len " << kv_len);
        EXPECT_LE(worst, 0x1p-7);
        EXPECT_EQ(nonzero_where_none, 0u);
      }
    }
  }
}

TEST_P(Attention, Bf16OutputOfFp32Inputs) {
  posenc_attention_desc d = relative_1d(desc(1, 33, 33, 8), 2, 0);
  d.out_dtype = POSENC_BF16;  // fp32 inputs, bf16 output
  EXPECT_TRUE(matches_reference(context(), d));
}

// --- Grouped kv heads and strides (STRIDED).

posenc_attention_desc grouped(posenc_attention_desc d, int64_t kv_heads) {
  d.kv_heads = kv_heads;
  return d;
}

// d with each bias kind in turn (per-head tables, clipped or not, relative
// values) and causal, for 1D-shaped descs.
std::vector<posenc_attention_desc> each_bias(const posenc_attention_desc& d) {
  posenc_attention_desc absolute = d;
  absolute.bias = POSENC_BIAS_ABSOLUTE;
  absolute.tables_per_head = 1;
  posenc_attention_desc values = relative_1d(d, 5, 1);
  values.relative_values = 1;
  return {d, causal(d, d.kv_len - d.q_len), absolute, relative_1d(d, 0, 0),
          causal(values, d.kv_len - d.q_len)};
}

// Small problems, whose products run the decode kernels at any row count on
// every path but the baseline (plan.cpp): Swin's windows of 49 tokens, 64
// keys, odd sizes; every bias kind, causal, both dense layouts, bf16;
// grouped heads stacked into tasks of 12 rows.
TEST_P(Attention, SmallProblems) {
  for (const posenc_attention_desc& base :
       {desc(3, 49, 49, 32, 5), desc(2, 61, 64, 64), desc(1, 7, 13, 5, 3)}) {
    for (posenc_attention_layout layout : {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD}) {
      posenc_attention_desc shaped = base;
      shaped.layout = layout;
      for (const posenc_attention_desc& d : each_bias(shaped)) {
        EXPECT_TRUE(matches_reference(context(), d));
        EXPECT_TRUE(matches_reference(context(), as_bf16(d)));
      }
    }
  }
  const posenc_attention_desc window = relative_2d(4, 7, 7, 32, 1, 3);
  EXPECT_TRUE(matches_reference(context(), window));
  EXPECT_TRUE(matches_reference(context(), as_bf16(window, POSENC_BF16)));
  // 4 query heads of 3 queries per kv head, stacked (256 heads in all).
  const posenc_attention_desc stacked = causal(grouped(desc(8, 3, 40, 32, 32), 2), 37);
  ASSERT_EQ(ops::plan_attention(ops::make_attention_problem(stacked), 2, GetParam())
                .blocking.stacked_heads,
            4);
  EXPECT_TRUE(matches_reference(context(), stacked));
  EXPECT_TRUE(matches_reference(context(), as_bf16(stacked)));
}

// heads / kv_heads = 1, 4 and heads (multi-query), both dense layouts, every
// bias kind and causal; shapes of one and of several query blocks per head
// and of several key blocks, so that packed keys serve a group's heads.
TEST_P(Attention, GroupedKvHeads) {
  for (int64_t kv_heads : {8, 2, 1}) {
    for (posenc_attention_layout layout : {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD}) {
      posenc_attention_desc base = grouped(desc(8, 37, 53, 16, 2), kv_heads);
      base.layout = layout;
      for (const posenc_attention_desc& d : each_bias(base)) {
        EXPECT_TRUE(matches_reference(context(), d));
      }
    }
    EXPECT_TRUE(matches_reference(context(), grouped(relative_2d(8, 3, 5, 8, 1), kv_heads)));
  }
  // Tasks enough that 4 query heads of 15 queries stack (plan.cpp).
  EXPECT_TRUE(matches_reference(context(), grouped(relative_2d(64, 3, 5, 8, 1, 8), 8)));
  for (int64_t kv_heads : {1, 2}) {
    EXPECT_TRUE(matches_reference(context(), grouped(relative_1d(desc(4, 600, 300, 8), 0, 1),
                                                     kv_heads)));
    EXPECT_TRUE(matches_reference(
        context(), causal(grouped(relative_1d(desc(4, 70, 2600, 8), 40, 0), kv_heads), 2530)));
  }
}

TEST_P(Attention, GroupedKvHeadsBf16) {
  for (int64_t kv_heads : {8, 2, 1}) {
    for (const posenc_attention_desc& d : each_bias(grouped(desc(8, 37, 53, 16, 2), kv_heads))) {
      EXPECT_TRUE(matches_reference(context(), as_bf16(d, POSENC_BF16)));
    }
  }
  EXPECT_TRUE(matches_reference(context(),
                                as_bf16(grouped(relative_1d(desc(4, 600, 300, 64), 0, 1), 1))));
}

// A desc reading k and v in place from a cache [batch, kv_heads, capacity,
// head_dim] that holds kv_len tokens, q and out BTHD.
posenc_attention_desc from_kv_cache(posenc_attention_desc d, int64_t capacity) {
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.out_strides = dense_strides(POSENC_LAYOUT_BTHD, d.heads, d.q_len, d.head_dim);
  d.k_strides = d.v_strides = kv_cache_strides(reference::kv_heads_of(d), capacity, d.head_dim);
  return d;
}

// The cache rows past kv_len hold NaN: read, they would reach the outputs.
void poison_spare_rows(const posenc_attention_desc& d, int64_t capacity, std::vector<float>& x) {
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < reference::kv_heads_of(d); ++h) {
      for (int64_t t = d.kv_len; t < capacity; ++t) {
        for (int64_t c = 0; c < d.head_dim; ++c) {
          // (The last head's spare rows lie past the tensor's extent.)
          const size_t e = size_t(
              reference::index_of(d, d.k_strides, reference::kv_heads_of(d), capacity, b, h, t, c));
          if (e < x.size()) x[e] = std::numeric_limits<float>::quiet_NaN();
        }
      }
    }
  }
}

TEST_P(Attention, KvCacheWithSpareCapacity) {
  for (int64_t q_len : {1, 4, 33}) {
    for (int64_t kv_heads : {4, 1}) {
      const posenc_attention_desc base =
          from_kv_cache(grouped(desc(4, q_len, 50, 16, 2), kv_heads), 64);
      for (posenc_attention_desc d : each_bias(base)) {
        for (bool in_bf16 : {false, true}) {
          if (in_bf16) d = as_bf16(d, POSENC_BF16);
          AttentionTensors inputs = inputs_of(d);
          poison_spare_rows(d, 64, inputs.values(Tensor::k));
          poison_spare_rows(d, 64, inputs.values(Tensor::v));
          EXPECT_TRUE(matches_reference(context(), d, inputs));
        }
      }
    }
  }
}

// q, k and v as the views of one packed [batch, tokens, heads + 2 kv_heads,
// head_dim] buffer, passed as pointers into it (nothing is copied first),
// out BTHD or BHTD.
TEST_P(Attention, PackedQkvViews) {
  for (int64_t kv_heads : {4, 1}) {
    for (posenc_attention_layout out : {POSENC_LAYOUT_BTHD, POSENC_LAYOUT_BHTD}) {
      const posenc_attention_desc base =
          packed_qkv_desc(grouped(desc(4, 45, 45, 16, 2), kv_heads), out);
      for (posenc_attention_desc d : each_bias(base)) {
        for (bool in_bf16 : {false, true}) {
          if (in_bf16) d = as_bf16(d);
          AttentionTensors inputs = inputs_of(d, true);
          EXPECT_TRUE(matches_reference(context(), d, inputs));
        }
      }
    }
  }
  posenc_attention_desc map = packed_qkv_desc(relative_2d(4, 5, 3, 16, 1, 2),
                                              POSENC_LAYOUT_BTHD);
  AttentionTensors inputs = inputs_of(map, true);
  EXPECT_TRUE(matches_reference(context(), map, inputs));
}

// Causal blocks of values of more than 64 columns, which oneDNN's brgemm
// packs column block after column block: a query block's GEMM over fewer
// keys than its kv head's packed block reads each column block's leading
// rows (matmul_on_packed_b), its keys being whole blocks of oneDNN's rows:
// 250 tokens in query blocks of 64 from query 0, and from query offset 5
// (keys rounded up to whole quanta); dense, BTHD and packed qkv views, fp32
// and bf16, with relative values (fp32 probabilities first) too. Then the
// last 320 of 2176 tokens (query offset 1856, whole quanta), in key blocks
// of 1024: the column blocks accumulate. (192 value columns:
// AttentionValueDim.CausalBlocksOfWideValues.)
TEST_P(Attention, CausalBlocksOfWideValues) {
  for (int64_t offset : {0, 5}) {
    const posenc_attention_desc dense = causal(desc(2, 250, 250 + offset, 128), offset);
    posenc_attention_desc bthd = dense;
    bthd.layout = POSENC_LAYOUT_BTHD;
    posenc_attention_desc with_values = relative_1d(bthd, 16, 1);
    with_values.relative_values = 1;
    std::vector<posenc_attention_desc> descs = {dense, bthd, with_values};
    if (offset == 0) descs.push_back(packed_qkv_desc(dense, POSENC_LAYOUT_BTHD));
    for (const posenc_attention_desc& d : descs) {
      const bool packed = d.layout == POSENC_LAYOUT_STRIDED;
      for (bool in_bf16 : {false, true}) {
        const posenc_attention_desc call = in_bf16 ? as_bf16(d, POSENC_BF16) : d;
        EXPECT_TRUE(matches_reference(context(), call, inputs_of(call, packed)));
      }
    }
  }
  posenc_attention_desc long_keys = causal(desc(1, 320, 2176, 128), 1856);
  long_keys.layout = POSENC_LAYOUT_BTHD;
  EXPECT_TRUE(matches_reference(context(), long_keys));
  EXPECT_TRUE(matches_reference(context(), as_bf16(long_keys)));
}

// out written into a larger buffer (gaps between its rows, heads outermost)
// leaves the elements between its rows as they were (run() checks), and
// strides of 0 repeat a tensor (one k and v for the whole batch); v and out
// of value_head_dim wider and narrower than head_dim.
TEST_P(Attention, StridedOutAndRepeatedInputs) {
  posenc_attention_desc d = relative_1d(desc(3, 20, 30, 8, 2), 4, 1);
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = dense_strides(POSENC_LAYOUT_BHTD, 3, 20, 8);
  d.k_strides = d.v_strides = posenc_token_strides{0, 30 * 8, 8};
  d.out_strides = posenc_token_strides{20 * 11, 2 * 20 * 11 + 5, 11};  // [H, B, T, 11]
  EXPECT_TRUE(matches_reference(context(), d));
  EXPECT_TRUE(matches_reference(context(), causal(grouped(d, 1), 10)));
  d.q_strides = posenc_token_strides{0, 13, 3 * 13};  // BTHD with gaps, one q for both
  EXPECT_TRUE(matches_reference(context(), d));
  // v and out of other head sizes than q and k, their rows with gaps.
  for (int64_t dv : {13, 5}) {
    posenc_attention_desc values = d;
    values.value_head_dim = dv;
    values.v_strides = posenc_token_strides{3 * 30 * (dv + 2), dv + 2, 3 * (dv + 2)};
    values.out_strides = posenc_token_strides{20 * (dv + 3), 2 * 20 * (dv + 3) + 5, dv + 3};
    EXPECT_TRUE(matches_reference(context(), values));
    EXPECT_TRUE(matches_reference(context(), as_bf16(causal(values, 10), POSENC_BF16)));
  }
}

// Grouped heads whose tasks a thread count splits inside a group (6 heads
// in groups of 3, 12 tasks; 16 query heads a kv head, stacked 4 a task,
// reading each of its packed key blocks, with split keys: 24 tasks a group,
// on 3 threads a run ending inside a group and the next starting there, on
// 1 and 3 a slot holding blocks of one kv head when it packs the other's),
// and packed qkv
// on each path of strided views (q copied per task, keys and values packed
// or read as stored, decode kernels, stacked heads, split keys, causal
// blocks reading a leading part of the packed keys, and of each column
// block of values of 128 columns, fp32 and bf16): the reference's values,
// the same bits on 1, 2, 3 threads.
TEST_P(Attention, GroupedAndStridedSameBitsAtAnyThreadCount) {
  struct Call {
    posenc_attention_desc desc;
    bool packed_qkv;
  };
  const Call calls[] = {
      {causal(grouped(relative_1d(desc(6, 70, 90, 16, 2), 0, 1), 2), 20), false},
      {from_kv_cache(grouped(relative_1d(desc(6, 130, 300, 16, 2), 8, 1), 3), 320), false},
      {grouped(desc(32, 16, 4097, 32), 2), false},
      {as_bf16(grouped(desc(32, 16, 4097, 32), 2)), false},
      {packed_qkv_desc(grouped(desc(6, 100, 100, 16, 2), 2), POSENC_LAYOUT_BTHD), true},
      {packed_qkv_desc(causal(desc(2, 200, 200, 16, 2)), POSENC_LAYOUT_BTHD), true},
      {packed_qkv_desc(causal(desc(2, 256, 256, 128)), POSENC_LAYOUT_BTHD), true},
      {as_bf16(packed_qkv_desc(causal(desc(2, 256, 256, 128)), POSENC_LAYOUT_BTHD)), true},
      {packed_views(desc(4, 1, 2600, 16), POSENC_LAYOUT_BTHD), true},
      {packed_views(grouped(desc(8, 2, 3000, 16), 2), POSENC_LAYOUT_BTHD), true},
      {packed_views(causal(desc(2, 8, 2600, 16), 2592), POSENC_LAYOUT_BHTD), true}};
  for (const Call& call : calls) {
    const posenc_attention_desc& d = call.desc;
    AttentionTensors inputs = inputs_of(d, call.packed_qkv);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      posenc_context* raw = nullptr;
      ASSERT_EQ(posenc_context_create(GetParam(), threads, &raw), POSENC_OK);
      const std::vector<float> got = run(raw, inputs, threads == 2);
      posenc_context_destroy(raw);
      if (first.empty()) {
        first = got;
        EXPECT_TRUE(close_enough(got, reference::attention(d, inputs.reference()), inputs));
      } else {
        EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
            << threads << " threads [" << describe(d) << "]";
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(Attention);

// The bottleneck block: projection, 2D attention, NCHW output. With a qkv
// bias it runs through posenc_bottleneck, without through
// posenc_bottleneck_mhsa.
class Bottleneck : public IsaTest {};

::testing::AssertionResult bottleneck_matches(posenc_context* context,
                                              const posenc_bottleneck_desc& d,
                                              bool qkv_bias = false) {
  // q and k of heads*head_dim channels each, v and out of heads*value_head_dim.
  const int64_t dv = d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
  const int64_t qkv = d.heads * (2 * d.head_dim + dv), inner = d.heads * dv;
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  const std::vector<float> fmap =
      values(size_t(d.batch * d.channels * d.height * d.width), 11, d.dtype);
  // Weights of a model's scale, fan_in^-1/2: with weights in [-1, 1] the
  // position logits of an unscaled q are so large (std ~5) that rounding q
  // to bf16 once moves an output of a bf16 block by 0.04.
  std::vector<float> w = values(size_t(qkv * d.channels), 12, POSENC_F32);
  for (float& x : w) x /= std::sqrt(float(d.channels));
  if (d.dtype == POSENC_BF16) w = from_bf16(to_bf16(w));
  const std::vector<float> rel_h =
      values(size_t(heads * (2 * d.height - 1) * d.head_dim), 13, d.dtype);
  const std::vector<float> rel_w =
      values(size_t(heads * (2 * d.width - 1) * d.head_dim), 14, d.dtype);
  const std::vector<float> bias = values(qkv_bias ? size_t(qkv) : 0, 15, d.dtype);
  const size_t count = size_t(d.batch * inner * (d.height / d.stride) * (d.width / d.stride));
  GuardedFloats out(count);
  auto run = [&](const void* f, const void* wq, const void* b, const void* h, const void* rw) {
    if (!qkv_bias) {
      return posenc_bottleneck_mhsa(context, &d, f, wq, h, rw, out.data(), nullptr, 0);
    }
    const posenc_bottleneck_tensors t{f, wq, b, h, rw, out.data()};
    return posenc_bottleneck(context, &d, &t, nullptr, 0);
  };
  posenc_status status;
  if (d.dtype == POSENC_BF16) {
    const auto f = to_bf16(fmap), wb = to_bf16(w), bb = to_bf16(bias), h = to_bf16(rel_h),
               rw = to_bf16(rel_w);
    status = run(f.data(), wb.data(), qkv_bias ? bb.data() : nullptr, h.data(), rw.data());
  } else {
    status = run(fmap.data(), w.data(), qkv_bias ? bias.data() : nullptr, rel_h.data(),
                 rel_w.data());
  }
  if (status != POSENC_OK) return ::testing::AssertionFailure() << posenc_last_error();
  if (!out.guards_intact()) return ::testing::AssertionFailure() << "wrote past out";
  const auto want = reference::bottleneck_mhsa(d, fmap.data(), w.data(),
                                               qkv_bias ? bias.data() : nullptr, rel_h.data(),
                                               rel_w.data());
  const std::vector<float> got = as_floats(out, count, d.out_dtype);
  const bool bf16 = d.dtype == POSENC_BF16 || d.out_dtype == POSENC_BF16;
  return all_close(got.data(), want, bf16 ? kBf16Tol : kF32Atol, bf16 ? kBf16Tol : kF32Rtol);
}

TEST_P(Bottleneck, MatchesReference) {
  posenc_bottleneck_desc d = bottleneck_desc(2, 12, 3, 7, 2, 8);
  EXPECT_TRUE(bottleneck_matches(context(), d));
  d.tables_per_head = 1;
  EXPECT_TRUE(bottleneck_matches(context(), d));
  EXPECT_TRUE(bottleneck_matches(context(), bottleneck_desc(1, 32, 14, 14, 4, 16)));
  EXPECT_TRUE(bottleneck_matches(context(), bottleneck_desc(1, 5, 1, 1, 1, 8)));
  // A head of 260 columns: its panels of the projection are two column
  // tiles wide.
  EXPECT_TRUE(bottleneck_matches(context(), bottleneck_desc(2, 8, 3, 4, 1, 260), true));
}

// timm's BottleneckAttn options one at a time, then together, on odd and
// non-square maps: position logits from the unscaled q (scale_pos_embed=
// False), a qkv bias, and stride 2 (AvgPool2d(2, 2), which drops an odd
// map's last row and column).
TEST_P(Bottleneck, TimmOptions) {
  const posenc_bottleneck_desc plain = bottleneck_desc(2, 12, 5, 7, 2, 8);
  posenc_bottleneck_desc d = plain;
  d.bias_uses_scaled_q = 0;
  EXPECT_TRUE(bottleneck_matches(context(), d));
  EXPECT_TRUE(bottleneck_matches(context(), plain, true));
  d = plain;
  d.value_head_dim = d.head_dim;  // the same as 0
  EXPECT_TRUE(bottleneck_matches(context(), d));
  const int64_t maps[][2] = {{6, 8}, {5, 7}, {2, 2}, {3, 2}, {2, 9}, {9, 4}};
  for (const auto& map : maps) {
    d = bottleneck_desc(2, 12, map[0], map[1], 2, 8);
    d.stride = 2;
    EXPECT_TRUE(bottleneck_matches(context(), d)) << map[0] << "x" << map[1];
    d.bias_uses_scaled_q = 0;
    d.tables_per_head = 1;
    EXPECT_TRUE(bottleneck_matches(context(), d, true)) << map[0] << "x" << map[1];
  }
  // BoTNet26t's last stage: 16x16 to 8x8 (scaled down in channels).
  d = bottleneck_desc(1, 64, 16, 16, 4, 16);
  d.bias_uses_scaled_q = 0;
  d.stride = 2;
  EXPECT_TRUE(bottleneck_matches(context(), d, true));
}

// bf16 on every CPU: bf16 GEMMs where the attention runs them
// (attention_gemm_dtype), else the fp32 block on the inputs widened
// (attention_widen_test.cpp).
TEST_P(Bottleneck, Bf16) {
  posenc_bottleneck_desc d = bottleneck_desc(2, 16, 5, 6, 2, 16);
  d.dtype = POSENC_BF16;
  EXPECT_TRUE(bottleneck_matches(context(), d));
  d.out_dtype = POSENC_BF16;
  EXPECT_TRUE(bottleneck_matches(context(), d));
  d.bias_uses_scaled_q = 0;
  EXPECT_TRUE(bottleneck_matches(context(), d, true));
  for (posenc_dtype out_dtype : {POSENC_F32, POSENC_BF16}) {
    d = bottleneck_desc(2, 16, 7, 6, 2, 16);
    d.dtype = POSENC_BF16;
    d.out_dtype = out_dtype;
    d.stride = 2;
    d.bias_uses_scaled_q = 0;
    EXPECT_TRUE(bottleneck_matches(context(), d, true)) << out_dtype;
  }
  // Heads of 56 columns, a bf16 width whose panel rows are padded to 64
  // (gemm_output_stride), over 144 tokens (two row tiles).
  d = bottleneck_desc(2, 16, 9, 8, 2, 56);
  d.dtype = POSENC_BF16;
  EXPECT_TRUE(bottleneck_matches(context(), d, true));
  // 63 channels and heads of 63: the projection's and the attention's GEMM
  // depth that oneDNN 2.6.3's AMX kernels cannot run (runtime/matmul.hpp),
  // over 130 tokens (two row tiles).
  d = bottleneck_desc(2, 63, 13, 5, 1, 63);
  d.dtype = POSENC_BF16;
  EXPECT_TRUE(bottleneck_matches(context(), d, true));
}

// A bf16 qkv bias is added before qkv is rounded to bf16, once, as a bf16
// nn.Conv2d with a bias (timm's qkv) adds it. On one token the output is v:
// W_v x = 1 + 2^-8 - 2^-12 (exact in fp32) rounds down to 1 in bf16, and
// 1 + 2^-8 then ties to 1; W_v x + 2^-8 rounds up to 1 + 2^-7. Widened
// (bf16_gemms_outpace_fp32 false), qkv stays fp32: 1 + 2^-7 - 2^-12.
TEST_P(Bottleneck, Bf16QkvBiasIsAddedBeforeRounding) {
  posenc_bottleneck_desc d = bottleneck_desc(1, 3, 1, 1, 1, 1);
  d.dtype = POSENC_BF16;
  const std::vector<uint16_t> fmap = to_bf16({1.0f, 1.0f, 1.0f});
  const float row[3] = {1.0f, std::ldexp(1.0f, -8), -std::ldexp(1.0f, -12)};
  std::vector<float> w;
  for (int i = 0; i < 3; ++i) w.insert(w.end(), row, row + 3);  // q's, k's and v's
  const std::vector<uint16_t> w_qkv = to_bf16(w);
  const std::vector<uint16_t> bias = to_bf16(std::vector<float>(3, std::ldexp(1.0f, -8)));
  const std::vector<uint16_t> table = to_bf16({0.0f});
  GuardedFloats out(1);
  const posenc_bottleneck_tensors t{fmap.data(),  w_qkv.data(), bias.data(),
                                    table.data(), table.data(), out.data()};
  ASSERT_EQ(posenc_bottleneck(context(), &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  const float exact = 1.0f + std::ldexp(1.0f, -7) - std::ldexp(1.0f, -12);
  const float want = bf16_gemms_outpace_fp32() ? 1.0f + std::ldexp(1.0f, -7) : exact;
  EXPECT_EQ(out.data()[0], want);
}

// fp32 inputs, bf16 output of the pooled map (pooled in fp32, rounded once).
TEST_P(Bottleneck, PooledBf16Output) {
  posenc_bottleneck_desc d = bottleneck_desc(1, 8, 5, 4, 2, 8);
  d.stride = 2;
  d.out_dtype = POSENC_BF16;
  EXPECT_TRUE(bottleneck_matches(context(), d, true));
}

// timm's qk_ratio != 1: v (and the output) of dim_out / heads channels per
// head, q and k of head_dim, smaller and larger than v's (the projection
// then in two parts); with stride 2, a qkv bias, per-head tables, the
// unscaled q's logits; fp32 and bf16.
TEST_P(Bottleneck, ValueHeadDim) {
  const int64_t sizes[][2] = {{8, 16}, {16, 8}, {4, 1}, {8, 17}, {3, 13}};
  for (const auto& size : sizes) {
    SCOPED_TRACE("head_dim " + std::to_string(size[0]) + " value_head_dim " +
                 std::to_string(size[1]));
    posenc_bottleneck_desc d = bottleneck_desc(2, 12, 5, 7, 2, size[0]);
    d.value_head_dim = size[1];
    EXPECT_TRUE(bottleneck_matches(context(), d));
    d.bias_uses_scaled_q = 0;
    d.tables_per_head = 1;
    EXPECT_TRUE(bottleneck_matches(context(), d, true));
    d.stride = 2;
    EXPECT_TRUE(bottleneck_matches(context(), d, true));
    d.dtype = POSENC_BF16;
    EXPECT_TRUE(bottleneck_matches(context(), d, true));
    d.stride = 1;
    d.out_dtype = POSENC_BF16;
    EXPECT_TRUE(bottleneck_matches(context(), d, true));
  }
  // 144 tokens: two row tiles of each part of the projection (q's and k's
  // heads, v's), each part's rows of w_qkv packed once where oneDNN packs
  // them, with a qkv bias.
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_bottleneck_desc d = bottleneck_desc(2, 24, 9, 8, 2, 16);
    d.value_head_dim = 24;
    d.dtype = dtype;
    EXPECT_TRUE(bottleneck_matches(context(), d, true)) << dtype;
  }
  // timm's BottleneckAttn(64, 64, num_heads=4, qk_ratio=0.5) on an 8x8 map:
  // dim_head_qk = make_divisible(32, 8) / 4 = 8, dim_head_v = 64 / 4 = 16.
  posenc_bottleneck_desc d = bottleneck_desc(1, 64, 8, 8, 4, 8);
  d.value_head_dim = 16;
  d.bias_uses_scaled_q = 0;
  d.stride = 2;
  EXPECT_TRUE(bottleneck_matches(context(), d, true));
}

// The same bits at 1, 2 and 3 threads, on blocks whose projection oneDNN,
// made for the team, split by the team's size (so its sums' order followed
// the thread count), with a qkv bias: 56 tokens of 4 channels; 63 of 32
// channels into 3 heads; a batch of 3 maps, v's heads of their own size;
// bf16 with stride 2.
TEST_P(Bottleneck, SameBitsAtEveryThreadCount) {
  posenc_bottleneck_desc bf16 = bottleneck_desc(2, 24, 9, 8, 2, 16);
  bf16.dtype = bf16.out_dtype = POSENC_BF16;
  bf16.stride = 2;
  posenc_bottleneck_desc two_parts = bottleneck_desc(3, 20, 11, 6, 2, 8);
  two_parts.value_head_dim = 12;  // the projection in two parts
  const posenc_bottleneck_desc descs[] = {bottleneck_desc(1, 4, 7, 8, 1, 1),
                                          bottleneck_desc(1, 32, 7, 9, 3, 9), two_parts, bf16};
  for (const posenc_bottleneck_desc& d : descs) {
    SCOPED_TRACE(testing::Message() << d.batch << " x " << d.channels << " x " << d.height
                                    << "x" << d.width);
    const int64_t dv = d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
    const int64_t qkv = d.heads * (2 * d.head_dim + dv);
    // An input's bytes in the block's dtype.
    const auto in = [&](size_t count, uint32_t seed) {
      const std::vector<float> x = random_floats(count, seed);
      if (d.dtype == POSENC_F32) {
        const auto* bytes = reinterpret_cast<const unsigned char*>(x.data());
        return std::vector<unsigned char>(bytes, bytes + x.size() * sizeof(float));
      }
      const std::vector<uint16_t> bits = to_bf16(x);
      const auto* bytes = reinterpret_cast<const unsigned char*>(bits.data());
      return std::vector<unsigned char>(bytes, bytes + bits.size() * sizeof(uint16_t));
    };
    const auto fmap = in(size_t(d.batch * d.channels * d.height * d.width), 1);
    const auto w = in(size_t(qkv * d.channels), 2), bias = in(size_t(qkv), 3);
    const auto rel_h = in(size_t((2 * d.height - 1) * d.head_dim), 4);
    const auto rel_w = in(size_t((2 * d.width - 1) * d.head_dim), 5);
    const size_t out_bytes = size_t(d.batch * d.heads * dv * (d.height / d.stride) *
                                    (d.width / d.stride)) *
                             (d.out_dtype == POSENC_BF16 ? 2 : 4);
    std::vector<unsigned char> first;
    for (int threads : {1, 2, 3}) {
      posenc_context* raw = nullptr;
      ASSERT_EQ(posenc_context_create(GetParam(), threads, &raw), POSENC_OK);
      const std::unique_ptr<posenc_context, void (*)(posenc_context*)> context(
          raw, posenc_context_destroy);
      std::vector<unsigned char> out(out_bytes);
      const posenc_bottleneck_tensors t{fmap.data(), w.data(), bias.data(), rel_h.data(),
                                        rel_w.data(), out.data()};
      ASSERT_EQ(posenc_bottleneck(raw, &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
      if (threads == 1) {
        first = out;
      } else {
        EXPECT_TRUE(out == first) << threads << " threads";
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(Bottleneck);

// softmax_j(logits[r, j]) . v[j] for rows r of `keys` logits (-inf masked)
// against v of [keys, dim], in double.
std::vector<double> softmax_times(const float* logits, int64_t rows, int64_t keys,
                                  const float* v, int64_t dim) {
  std::vector<double> out(size_t(rows * dim), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits + r * keys;
    const double top = *std::max_element(l, l + keys);
    double sum = 0.0;
    for (int64_t j = 0; j < keys; ++j) sum += std::exp(double(l[j]) - top);
    for (int64_t j = 0; j < keys; ++j) {
      const double a = std::exp(double(l[j]) - top) / sum;
      for (int64_t c = 0; c < dim; ++c) out[size_t(r * dim + c)] += a * double(v[j * dim + c]);
    }
  }
  return out;
}

// One 1D table, sized as relative.h says, through both entry points: with
// k = 0 the attention's scores are its bias alone, so its output must be the
// softmax of posenc_relative_logits_1d's logits times v, with query offsets
// (one of them a decode step, p = keys - queries), clipping, masks, shared
// and per-head tables.
TEST(RelativeTable, SameLogitsThroughRelativeLogitsAndAttention) {
  constexpr int64_t kHeads = 2, kQueries = 3, kKeys = 7, kDim = 8;
  const std::vector<float> q = random_floats(size_t(kHeads * kQueries * kDim), 61);
  const std::vector<float> v = random_floats(size_t(kHeads * kKeys * kDim), 62);
  const std::vector<float> k(v.size(), 0.0f);
  for (int64_t offset : {0, 2, 4}) {
    for (int64_t clip : {0, 2}) {
      for (int per_head : {0, 1}) {
        for (int mask : {0, 1}) {
          SCOPED_TRACE("offset " + std::to_string(offset) + " clip " + std::to_string(clip) +
                       " per_head " + std::to_string(per_head) + " causal " +
                       std::to_string(mask));
          const int64_t rows = clip > 0 ? 2 * clip + 1 : offset + kQueries + kKeys - 1;
          const int64_t table_heads = per_head ? kHeads : 1;
          const std::vector<float> table = random_floats(size_t(table_heads * rows * kDim), 63);
          const posenc_relative_options options{offset, clip, mask};
          std::vector<float> logits(size_t(kHeads * kQueries * kKeys));
          ASSERT_EQ(posenc_relative_logits_1d(nullptr, 1, kHeads, kQueries, kKeys, kDim,
                                              q.data(), table.data(), table_heads, &options,
                                              logits.data()),
                    POSENC_OK)
              << posenc_last_error();

          posenc_attention_desc d;
          posenc_attention_desc_init(&d, 1, kHeads, kQueries, kKeys, kDim);
          d.bias = POSENC_BIAS_RELATIVE_1D;
          d.bias_uses_scaled_q = 0;
          d.max_distance = clip;
          d.query_offset = offset;
          d.causal = mask;
          d.tables_per_head = per_head;
          std::vector<float> out(q.size());
          const posenc_attention_tensors t{q.data(), k.data(), v.data(), table.data(),
                                           nullptr,  nullptr,  nullptr,  out.data(),
                                           nullptr,  nullptr,  nullptr,  nullptr,
                                           nullptr, nullptr, nullptr, nullptr};
          ASSERT_EQ(posenc_attention(nullptr, &d, &t, nullptr, 0), POSENC_OK)
              << posenc_last_error();
          for (int64_t h = 0; h < kHeads; ++h) {
            const std::vector<double> want =
                softmax_times(logits.data() + h * kQueries * kKeys, kQueries, kKeys,
                              v.data() + h * kKeys * kDim, kDim);
            EXPECT_TRUE(all_close(out.data() + h * kQueries * kDim, want, 1e-5, 1e-4))
                << "head " << h;
          }
        }
      }
    }
  }
}

TEST(AttentionWorkspace, StaysSmallForLongSequencesAndLargeMaps) {
  constexpr size_t kLimit = size_t(64) << 20;
  const Context context(Isa::automatic, 2);
  size_t bytes = 0;
  posenc_attention_desc d = relative_2d(4, 64, 64, 64, 0);
  ASSERT_EQ(posenc_attention_workspace_size(context.get(), &d, &bytes), POSENC_OK);
  EXPECT_LE(bytes, kLimit);
  d = relative_1d(desc(8, 4096, 4096, 64), 0, 0);
  d.relative_values = 1;
  ASSERT_EQ(posenc_attention_workspace_size(context.get(), &d, &bytes), POSENC_OK);
  EXPECT_LE(bytes, kLimit);
}

// The scores of fp32 key blocks of every width are dense: a longer row
// stride (what bf16 needs at oneDNN 2.6.3's broken widths, 49 to 63) sends
// oneDNN's small fp32 GEMMs from brgemm to its slower gemm (Swin's 7x7
// windows: 49 keys). GEMMs in bf16 pad those widths only (bf16 widened to
// fp32 where the attention's GEMMs do not run in bf16 runs fp32 GEMMs).
TEST(AttentionPlan, ScoresArePaddedOnlyAtBrokenBf16Widths) {
  for (int64_t keys = 40; keys <= 72; ++keys) {
    for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
      posenc_attention_desc d = desc(8, keys, keys, 32);
      d.dtype = d.out_dtype = dtype;
      const ops::AttentionProblem problem = ops::make_attention_problem(d);
      const ops::AttentionPlan plan = ops::plan_attention(problem, 1, POSENC_ISA_AVX2);
      const bool bf16_gemms = problem.gemm_dtype == POSENC_BF16;
      EXPECT_EQ(bf16_gemms, dtype == POSENC_BF16 && bf16_gemms_outpace_fp32());
      const bool padded = bf16_gemms && keys >= 49 && keys <= 63;
      EXPECT_EQ(plan.layout.scores_ld, padded ? 64 : keys) << "keys " << keys << " dtype " << dtype;
    }
  }
}

// The attention's GEMMs run in bf16 on AMX and on AMD's AVX512-BF16, and
// widen bf16 to fp32 elsewhere (runtime/matmul.hpp), stated apart from
// bf16_gemms_outpace_fp32.
TEST(AttentionPlan, Bf16GemmsOnAmxOrAmdAvx512Bf16) {
  if (std::getenv("POSENC_TEST_BF16_GEMMS") != nullptr) GTEST_SKIP() << "forced bf16 GEMMs";
  const bool bf16 = ops::attention_gemm_dtype(POSENC_BF16) == POSENC_BF16;
  if (onednn_bf16_gemm_is_amx()) {
    EXPECT_TRUE(bf16);
  } else if (!onednn_bf16_gemm_is_native()) {
    EXPECT_FALSE(bf16);
  } else {
    EXPECT_EQ(bf16, cpu_is_amd());
  }
}

// Small problems (at most 64 keys, heads of at most 64, tasks of at most 64
// rows) run their products with the decode kernels, except on the baseline
// path, where the attention's GEMMs run in bf16, and for bf16 where the
// decode kernels use AVX512-BF16 (plan.cpp).
TEST(AttentionPlan, SmallProblemsRunTheDecodeKernels) {
  const auto own_products = [](const posenc_attention_desc& d, posenc_isa isa) {
    return ops::plan_attention(ops::make_attention_problem(d), 2, isa).blocking.decode_products;
  };
  const posenc_attention_desc window = desc(4, 49, 49, 32, 64);  // Swin's 7x7 windows
  for (posenc_isa isa : {POSENC_ISA_AVX512, POSENC_ISA_AVX2, POSENC_ISA_NEON}) {
    EXPECT_TRUE(own_products(window, isa)) << isa;
  }
  EXPECT_FALSE(own_products(window, POSENC_ISA_BASELINE));
  EXPECT_EQ(own_products(as_bf16(window), POSENC_ISA_AVX2), !bf16_gemms_outpace_fp32());
  // bf16 on the AVX-512 path of an AVX512-BF16 CPU: GEMMs, in bf16 or widened.
  if (cpu_has(kCpuAvx512Bf16)) {
    EXPECT_FALSE(own_products(as_bf16(window), POSENC_ISA_AVX512));
  }
  EXPECT_TRUE(own_products(desc(4, 64, 64, 64), POSENC_ISA_AVX2));
  EXPECT_FALSE(own_products(desc(4, 64, 65, 64), POSENC_ISA_AVX2));
  EXPECT_FALSE(own_products(desc(4, 64, 64, 65), POSENC_ISA_AVX2));
  posenc_attention_desc wide_values = desc(4, 64, 64, 32);
  wide_values.value_head_dim = 65;
  EXPECT_FALSE(own_products(wide_values, POSENC_ISA_AVX2));
  // 8 heads of 100 queries: tasks of one block of 100 rows.
  EXPECT_FALSE(own_products(desc(8, 100, 40, 32), POSENC_ISA_AVX2));
}

// Query blocks are whole multiples of 32 rows where that keeps their
// number (so that causal blocks from query 0 end on whole blocks of oneDNN's
// packed rows), worked out from the plan's constants: 2000 tokens in 32
// blocks of 63 rows become blocks of 64; 250 tokens of 2 heads, cut into 4
// blocks of 63 for 8 tasks, blocks of 64; 100 tokens of one head, 6 blocks
// of 17 for the tasks, stay so (blocks of 32 would be 4).
TEST(AttentionPlan, QueryBlocksAreWholeRowQuantaWhereTheirNumberStays) {
  struct Case {
    int64_t heads, tokens, query_block, query_blocks;
  };
  for (const Case c : {Case{32, 2000, 64, 32}, Case{2, 250, 64, 4}, Case{1, 100, 17, 6}}) {
    const ops::AttentionProblem problem =
        ops::make_attention_problem(causal(desc(c.heads, c.tokens, c.tokens, 64)));
    const ops::AttentionPlan plan = ops::plan_attention(problem, 2, POSENC_ISA_AVX2);
    SCOPED_TRACE("tokens " + std::to_string(c.tokens));
    EXPECT_EQ(plan.blocking.query_block, c.query_block);
    EXPECT_EQ(plan.blocking.query_blocks, c.query_blocks);
  }
}

// A query block's keys, rounded up to whole kKeyQuantum (32) within kv_len,
// worked out by hand: a causal block from query offset 5 ends on whole
// blocks of oneDNN's packed rows, as one from offset 0 does.
TEST(AttentionPlan, BlockKeysAreWholeQuantaWithinKvLen) {
  const ops::AttentionProblem causal_5 =
      ops::make_attention_problem(causal(desc(2, 250, 255, 64), 5));
  const ops::Sequence whole{255, 250, 5};
  EXPECT_EQ(ops::computed_keys(causal_5, whole, 0, 64), 96);     // queries at 5..68
  EXPECT_EQ(ops::computed_keys(causal_5, whole, 64, 64), 160);   // 133 visible
  EXPECT_EQ(ops::computed_keys(causal_5, whole, 192, 64), 255);  // 255 visible, kv_len
  EXPECT_EQ(ops::computed_keys(causal_5, ops::Sequence{255, 250, -100}, 0, 64), 0);
  EXPECT_EQ(ops::computed_keys(causal_5, ops::Sequence{255, 10, 5}, 64, 64), 0);  // past q
  const ops::AttentionProblem full = ops::make_attention_problem(desc(2, 250, 255, 64));
  EXPECT_EQ(ops::computed_keys(full, whole, 0, 64), 255);
  EXPECT_EQ(ops::computed_keys(full, ops::Sequence{100, 250, 0}, 0, 64), 128);  // a length
}

// q, k and v as views of a packed qkv tensor (rows 3 * heads * head_dim
// apart): a task copies its rows of q dense for its GEMMs (oneDNN's brgemm
// kernels, AMX among them, take dense or packed operands only), and a kv
// head's keys and values are packed even for the one task that reads them
// (one query block of heads without groups) where its GEMMs have rows
// enough to repay the copy and the keys are not split; decoding's few rows
// and a small problem's (plan.cpp's small_problem_products, on the AVX2
// path) read q in place.
TEST(AttentionPlan, StridedInputsReachTheGemmsDenseOrPacked) {
  struct Case {
    int64_t q_len, kv_len;
    bool copies_queries, packs;
  };
  const Case cases[] = {{128, 128, true, true},    // one reader of 128 rows
                        {300, 300, true, true},    // two readers
                        {49, 80, true, false},     // one reader of 49 rows
                        {49, 49, false, false},    // a small problem (Swin's window)
                        {16, 8192, true, false},   // keys split
                        {2, 8192, false, false}};  // decode kernels
  for (const Case& c : cases) {
    const posenc_attention_desc d =
        packed_views(desc(8, c.q_len, c.kv_len, 32), POSENC_LAYOUT_BTHD);
    const ops::AttentionProblem problem = ops::make_attention_problem(d);
    const ops::AttentionPlan plan = ops::plan_attention(problem, 1, POSENC_ISA_AVX2);
    SCOPED_TRACE("q_len " + std::to_string(c.q_len) + " kv_len " + std::to_string(c.kv_len));
    EXPECT_EQ(plan.blocking.copies_queries, c.copies_queries);
    EXPECT_EQ(plan.layout.packed.key_block_bytes > 0, c.packs);
    EXPECT_EQ(plan.layout.packed.value_block_bytes > 0, c.packs);
  }
  const posenc_attention_desc dense = desc(8, 128, 128, 32);
  const ops::AttentionProblem problem = ops::make_attention_problem(dense);
  const ops::AttentionPlan plan = ops::plan_attention(problem, 1, POSENC_ISA_AVX2);
  EXPECT_FALSE(plan.blocking.copies_queries);
  EXPECT_EQ(plan.layout.packed.bytes(), 0u);  // one reader of dense keys: as stored
}

// A few queries of many heads against long keys, a kv head for 16 query
// heads (GroupedAndStridedSameBitsAtAnyThreadCount's): 4 of them stacked
// (64 rows), split keys, each key block read by 4 tasks, so packed (a
// block when a task first reads it).
TEST(AttentionPlan, SplitKeysOfSeveralReadersArePacked) {
  const posenc_attention_desc d = grouped(desc(32, 16, 4097, 32), 2);
  const ops::AttentionProblem problem = ops::make_attention_problem(d);
  const ops::AttentionPlan plan = ops::plan_attention(problem, 1, POSENC_ISA_AVX2);
  EXPECT_EQ(plan.blocking.stacked_heads, 4);
  EXPECT_EQ(plan.blocking.key_splits, 6);
  EXPECT_EQ(plan.blocking.kv_readers(problem), 4);
  EXPECT_EQ(plan.blocking.tasks, 48);
  EXPECT_EQ(plan.layout.packed.key_blocks, 6);
  EXPECT_GT(plan.layout.packed.bytes(), 0u);
}

TEST(AttentionCppApi, WorkspaceObjectAndErrors) {
  const posenc::Context context;
  posenc_attention_desc d = relative_1d(desc(2, 9, 9, 8), 0, 0);
  AttentionTensors inputs = inputs_of(d);
  std::vector<float> out(size_t(2 * 9 * 8));
  posenc::AttentionWorkspace workspace(context, d);
  EXPECT_GT(workspace.size(), 0u);
  workspace.run(inputs.tensors(out.data()));
  EXPECT_TRUE(all_close(out.data(), reference_for(d), kF32Atol, kF32Rtol));
  // The same call on the caller's buffer, at an odd address; one byte short
  // is refused by name, nothing written.
  const size_t bytes = posenc::attention_workspace_size(context, d);
  std::vector<unsigned char> arena(bytes + 1);
  std::vector<float> arena_out(out.size());
  posenc::attention(context, d, inputs.tensors(arena_out.data()), arena.data() + 1, bytes);
  EXPECT_EQ(arena_out, out);
  std::fill(arena_out.begin(), arena_out.end(), -1.0f);
  try {
    posenc::attention(context, d, inputs.tensors(arena_out.data()), arena.data(), bytes - 1);
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("workspace_bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(arena_out, std::vector<float>(out.size(), -1.0f));
  d.head_dim = 0;
  try {
    posenc::attention(context, d, inputs.tensors(out.data()));
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos);
  }
}

// A workspace runs on a context of its own, of the given one's path and
// threads: the given object may be a temporary, moved or destroyed (it ran
// on the process default after a move, and read freed memory after a
// destruction). It moves, and assigns by moving (itself included).
TEST(AttentionCppApi, WorkspaceOutlivesTheContextItWasMadeFrom) {
  const posenc_attention_desc d = relative_1d(desc(2, 33, 33, 16), 0, 0);
  AttentionTensors inputs = inputs_of(d);
  const size_t size = size_t(2 * 33 * 16);
  std::vector<float> expected(size);
  posenc::attention(Context(Isa::baseline, 1), d, inputs.tensors(expected.data()));

  auto owner = std::make_unique<Context>(Isa::baseline, 1);
  AttentionWorkspace workspace(*owner, d);
  { const Context moved = std::move(*owner); }
  owner.reset();
  std::vector<float> out(size);
  workspace.run(inputs.tensors(out.data()));
  EXPECT_EQ(out, expected);

  AttentionWorkspace from_temporary(Context(Isa::baseline, 1), d);
  AttentionWorkspace assigned(Context(), desc(1, 1, 1, 8));
  assigned = std::move(from_temporary);
  EXPECT_EQ(from_temporary.size(), 0u);  // as the header says of a moved-from one
  std::fill(out.begin(), out.end(), 0.0f);
  assigned.run(inputs.tensors(out.data()));
  EXPECT_EQ(out, expected);
  // Moved into itself, it keeps its buffer.
  const size_t bytes = assigned.size();
  AttentionWorkspace& same = assigned;
  assigned = std::move(same);
  EXPECT_EQ(assigned.size(), bytes);
  static_assert(std::is_nothrow_move_constructible<AttentionWorkspace>::value, "");
  static_assert(std::is_nothrow_move_assignable<AttentionWorkspace>::value, "");
}

// The packing helpers describe only what they can: one head size, as many
// keys as queries, a dense out of BHTD or BTHD (with value_head_dim 4 of 8
// the views took rows of 48 floats where the packing has 40).
TEST(AttentionCppApi, PackedQkvDescRefusesWhatItWouldMisdescribe) {
  const auto refuses = [](const std::function<void()>& call, const char* named) {
    try {
      call();
      ADD_FAILURE() << "expected posenc::Error naming " << named;
    } catch (const posenc::Error& e) {
      EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  posenc_attention_desc values = desc(2, 5, 5, 8);
  values.value_head_dim = 4;
  refuses([&] { packed_qkv_desc(values, POSENC_LAYOUT_BHTD); }, "value_head_dim");
  refuses([&] { packed_qkv_desc(desc(2, 4, 5, 8), POSENC_LAYOUT_BHTD); }, "q_len");
  refuses([&] { packed_qkv_desc(desc(2, 5, 5, 8), POSENC_LAYOUT_STRIDED); },
          "posenc::packed_qkv_desc: out_layout");
  values.value_head_dim = 8;
  EXPECT_EQ(packed_qkv_desc(values, POSENC_LAYOUT_BTHD).layout, POSENC_LAYOUT_STRIDED);
}

TEST(AttentionCppApi, BottleneckWrapper) {
  const posenc::Context context;
  const posenc_bottleneck_desc d = bottleneck_desc(1, 6, 2, 3, 2, 4);
  const std::vector<float> fmap = random_floats(6 * 6, 41), w = random_floats(24 * 6, 42);
  const std::vector<float> rel_h = random_floats(3 * 4, 43), rel_w = random_floats(5 * 4, 44);
  std::vector<float> out(8 * 6);
  EXPECT_GT(bottleneck_workspace_size(context, d), 0u);
  bottleneck_mhsa(context, d, fmap.data(), w.data(), rel_h.data(), rel_w.data(), out.data());
  EXPECT_TRUE(all_close(out.data(),
                        reference::bottleneck_mhsa(d, fmap.data(), w.data(), nullptr,
                                                   rel_h.data(), rel_w.data()),
                        kF32Atol, kF32Rtol));
  EXPECT_THROW(
      bottleneck_mhsa(context, d, nullptr, w.data(), rel_h.data(), rel_w.data(), out.data()),
      posenc::Error);
  const std::vector<float> bias = random_floats(24, 45);
  bottleneck(context, d,
             {fmap.data(), w.data(), bias.data(), rel_h.data(), rel_w.data(), out.data()});
  EXPECT_TRUE(all_close(out.data(),
                        reference::bottleneck_mhsa(d, fmap.data(), w.data(), bias.data(),
                                                   rel_h.data(), rel_w.data()),
                        kF32Atol, kF32Rtol));
  // The same call on a workspace kept for it.
  BottleneckWorkspace workspace(context, d);
  EXPECT_EQ(workspace.size(), bottleneck_workspace_size(context, d));
  std::vector<float> kept_out(out.size());
  workspace.run({fmap.data(), w.data(), bias.data(), rel_h.data(), rel_w.data(), kept_out.data()});
  EXPECT_EQ(kept_out, out);
  // And on the caller's buffer; one byte short is refused, nothing written.
  std::vector<unsigned char> arena(workspace.size());
  std::vector<float> arena_out(out.size());
  const posenc_bottleneck_tensors to_arena_out{fmap.data(),  w.data(),     bias.data(),
                                               rel_h.data(), rel_w.data(), arena_out.data()};
  bottleneck(context, d, to_arena_out, arena.data(), arena.size());
  EXPECT_EQ(arena_out, out);
  std::fill(arena_out.begin(), arena_out.end(), -1.0f);
  EXPECT_THROW(bottleneck(context, d, to_arena_out, arena.data(), arena.size() - 1),
               posenc::Error);
  EXPECT_EQ(arena_out, std::vector<float>(out.size(), -1.0f));
}

}  // namespace
}  // namespace posenc::test
