// The options of posenc_attention together, as serving code calls it: a
// padded batch whose q, k and v are views of one packed qkv tensor with
// grouped kv heads, per-sequence kv/q lengths and query offsets, an additive
// mask shared by a period of the batch, causal, each bias kind; against the
// double reference on every ISA path, fp32 and bf16, and the same bits at 1,
// 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/problem.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

// q, k, v and the tables the desc uses, q, k and v in one buffer (the views
// of a packed qkv, or three tensors one after another); a mask with about
// one entry in eight -inf.
AttentionTensors call_of(const posenc_attention_desc& d, Sequences s, bool packed) {
  AttentionTensors x(d, std::move(s));
  const auto add = [&](Tensor t, size_t count, uint32_t seed) {
    x.fill(t, count, seed * 131u + uint32_t(count));
  };
  const int64_t kv_heads = d.kv_heads == 0 ? d.heads : d.kv_heads;
  int64_t k_offset, v_offset;
  if (packed) {
    const PackedQkv qkv = packed_qkv(d.q_len, d.heads, kv_heads, d.head_dim);
    k_offset = qkv.k_offset;
    v_offset = qkv.v_offset;
  } else {
    k_offset = reference::extent_of(d, d.q_strides, d.heads, d.q_len);
    v_offset = k_offset + reference::extent_of(d, d.k_strides, kv_heads, d.kv_len);
  }
  add(Tensor::q, size_t(v_offset + reference::extent_of(d, d.v_strides, kv_heads, d.kv_len)), 1);
  x.view(Tensor::k, Tensor::q, size_t(k_offset));
  x.view(Tensor::v, Tensor::q, size_t(v_offset));
  const int64_t rows = d.bias == POSENC_BIAS_ABSOLUTE ? d.kv_len : 2 * d.max_distance + 1;
  const bool one_table = d.bias == POSENC_BIAS_ABSOLUTE || d.bias == POSENC_BIAS_RELATIVE_1D;
  add(Tensor::table, one_table ? size_t(d.heads * rows * d.head_dim) : 0, 2);
  const bool map = d.bias == POSENC_BIAS_RELATIVE_2D;
  add(Tensor::table_h, map ? size_t(d.heads * (2 * d.map_height - 1) * d.head_dim) : 0, 3);
  add(Tensor::table_w, map ? size_t(d.heads * (2 * d.map_width - 1) * d.head_dim) : 0, 4);
  add(Tensor::value_table, d.relative_values ? size_t(d.heads * rows * d.head_dim) : 0, 5);
  x.set(Tensor::mask,
        mask_values(size_t(d.mask_batch * d.mask_heads * d.mask_q_len * d.kv_len), 91, -0.75f));
  // Sinks from well below the rows' logits to well above them.
  x.fill(Tensor::sinks, d.sinks ? size_t(d.heads) : 0, 92, -3.0f, 5.0f);
  return x;
}

// Per-head tables of each bias kind (1D clipped at 8 with relative values;
// 2D over a 1 x q_len map, not causal), causal otherwise unless said.
posenc_attention_desc with_bias(posenc_attention_desc d, posenc_attention_bias bias,
                                bool causal) {
  d.bias = bias;
  d.tables_per_head = 1;
  d.causal = causal;
  if (bias == POSENC_BIAS_RELATIVE_1D) {
    d.max_distance = 8;
    d.relative_values = 1;
  }
  if (bias == POSENC_BIAS_RELATIVE_2D) {
    d.causal = 0;
    d.map_height = 1;
    d.map_width = d.q_len;
  }
  return d;
}

// Each bias kind in fp32 and bf16: the reference, and the same bits at 1, 2
// and 3 threads.
void expect_all_biases_match(posenc_isa isa, const posenc_attention_desc& base,
                             const Sequences& s, bool packed,
                             std::initializer_list<posenc_attention_bias> biases,
                             bool causal = true) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    for (posenc_attention_bias bias : biases) {
      posenc_attention_desc d = with_bias(base, bias, causal);
      d.dtype = d.out_dtype = dtype;
      d.index_type = POSENC_INDEX_INT64;  // the per-sequence tensors as int64
      SCOPED_TRACE("bias " + std::to_string(int(bias)) + (dtype == POSENC_BF16 ? " bf16" : ""));
      const AttentionTensors call = call_of(d, s, packed);
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        posenc_context* raw = nullptr;
        ASSERT_EQ(posenc_context_create(isa, threads, &raw), POSENC_OK);
        const std::unique_ptr<posenc_context, void (*)(posenc_context*)> context(
            raw, posenc_context_destroy);
        const std::vector<float> got = run(raw, call, false);
        if (first.empty()) {
          first = got;
          EXPECT_TRUE(
              close_to_reference(got, reference::attention(d, call.reference()), call, 1e-5, 1e-4));
        } else {
          EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
              << threads << " threads";
        }
      }
    }
  }
}

class AttentionAllOptions : public IsaTest {};

// A padded batch of 4 read from one packed qkv with 6 query heads on 2 kv
// heads (out dense BHTD, as the reference gives it), and its lengths 0 to
// full and offsets.
posenc_attention_desc padded_batch() {
  posenc_attention_desc d = attention_desc(4, 6, 37, 37, 16);
  d.kv_heads = 2;
  return packed_qkv_desc(d, POSENC_LAYOUT_BHTD);
}
const Sequences kPaddedSequences{{37, 20, 1, 0}, {37, 19, 1, 5}, {0, 3, -2, 9}};
// The padded batch with a per-head mask with a batch period of 2.
posenc_attention_desc masked_padded_batch() {
  posenc_attention_desc d = padded_batch();
  d.mask_batch = 2;
  d.mask_heads = 6;
  d.mask_q_len = 37;
  return d;
}
constexpr std::initializer_list<posenc_attention_bias> kBiasesWithQ = {
    POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D, POSENC_BIAS_RELATIVE_2D};

TEST_P(AttentionAllOptions, PackedPaddedBatch) {
  expect_all_biases_match(GetParam(), masked_padded_batch(), kPaddedSequences, true,
                          kBiasesWithQ);
}

// Decode steps of two sequences against a KV cache with spare capacity,
// grouped heads, a key-padding mask: the keys split into ranges.
TEST_P(AttentionAllOptions, SplitKeyDecode) {
  posenc_attention_desc d = attention_desc(2, 4, 3, 4500, 16);
  d.kv_heads = 2;
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.out_strides = dense_strides(POSENC_LAYOUT_BHTD, 4, 3, 16);
  d.k_strides = d.v_strides = kv_cache_strides(2, 4600, 16);
  d.mask_batch = 2;
  d.mask_heads = 1;
  d.mask_q_len = 1;
  const Sequences s{{4500, 2100}, {3, 2}, {4497, 2098}};
  expect_all_biases_match(GetParam(), d, s, false,
                          {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D});
}

// Grouped-query decoding runs a kv head's query heads stacked as one task's
// rows where the tasks stay many (plan.cpp): B8 H64 on 8 kv heads stacks all
// 8 of a group for q_len 5 and 4 (the most rows a task takes) for q_len 16;
// B1 H16 on 2 kv heads, one query against 8192 keys, stacks 4 and splits
// the keys. BTHD q and out, a per-head mask, lengths and offsets.
// (A 2D map's stacked heads: Attention.GroupedKvHeads.)
TEST_P(AttentionAllOptions, StackedHeadsDecode) {
  for (int64_t q_len : {5, 16}) {
    posenc_attention_desc d = attention_desc(8, 64, q_len, 90, 16);
    d.kv_heads = 8;
    d.layout = POSENC_LAYOUT_BTHD;
    d.mask_batch = 1;
    d.mask_heads = 64;
    d.mask_q_len = q_len;
    SCOPED_TRACE("q_len " + std::to_string(q_len));
    const Sequences s{{90, 60, 0, 1, 90, 45, 33, 89},
                      {q_len, 3, 0, 1, q_len, 2, q_len, 4},
                      {90 - q_len, 57, 5, 0, 20, 43, -3, 85}};
    expect_all_biases_match(GetParam(), d, s, false,
                            {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D});
  }
  posenc_attention_desc d = attention_desc(1, 16, 1, 8192, 16);
  d.kv_heads = 2;
  d.layout = POSENC_LAYOUT_BTHD;
  d.mask_batch = 1;
  d.mask_heads = 1;
  d.mask_q_len = 1;
  const Sequences s{{8100}, {1}, {8099}};
  expect_all_biases_match(GetParam(), d, s, false,
                          {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D});
}

// Sliding windows (Mistral's, with causal): a prefill of 300 tokens with
// windows inside a key block, across one and wider than the keys; a chunk
// of 70 queries after 2930 cached keys, whose query blocks skip the key
// blocks before their windows; decode steps of three sequences of their own
// lengths and offsets, the window's keys split into ranges from its first
// key block (1100 keys from key 3060 need the fourth range of 512 keys); a
// padded batch of packed views.
TEST_P(AttentionAllOptions, SlidingWindow) {
  const std::initializer_list<posenc_attention_bias> biases = {
      POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D};
  for (int64_t window : {1, 7, 64, 100, 1000}) {
    SCOPED_TRACE("window " + std::to_string(window));
    posenc_attention_desc d = attention_desc(2, 4, 300, 300, 16);
    d.kv_heads = 2;
    d.sliding_window = window;
    expect_all_biases_match(GetParam(), d, {}, false, biases);
  }
  posenc_attention_desc chunk = attention_desc(1, 4, 70, 3000, 16);
  chunk.query_offset = 2930;
  chunk.sliding_window = 500;
  expect_all_biases_match(GetParam(), chunk, {}, false, biases);
  for (int64_t window : {300, 1000, 1100}) {
    SCOPED_TRACE("decode, window " + std::to_string(window));
    posenc_attention_desc decode = attention_desc(3, 4, 1, 4500, 16);
    decode.kv_heads = 1;
    decode.sliding_window = window;
    expect_all_biases_match(GetParam(), decode,
                            {{4500, 4160, 2100}, {1, 1, 1}, {4499, 4159, 2099}}, false, biases);
  }
  posenc_attention_desc padded = padded_batch();
  padded.sliding_window = 9;
  expect_all_biases_match(GetParam(), padded, kPaddedSequences, true, biases);
}

// Windows on both sides (ModernBERT's local attention, W = 65 for its 128):
// a prefill of 300 tokens with windows inside a key block, across one and
// wider than the keys; a chunk of 70 queries after 2930 cached keys, whose
// later keys no query sees; 5 queries amid 4500 keys, the window's split
// into ranges; a padded batch of packed views with offsets.
TEST_P(AttentionAllOptions, BidirectionalWindow) {
  for (int64_t window : {1, 7, 65, 100, 1000}) {
    SCOPED_TRACE("window " + std::to_string(window));
    posenc_attention_desc d = attention_desc(2, 4, 300, 300, 16);
    d.kv_heads = 2;
    d.sliding_window = window;
    expect_all_biases_match(GetParam(), d, {}, false, kBiasesWithQ, false);
  }
  posenc_attention_desc chunk = attention_desc(1, 4, 70, 3000, 16);
  chunk.query_offset = 2000;
  chunk.sliding_window = 300;
  expect_all_biases_match(GetParam(), chunk, {}, false,
                          {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D},
                          false);
  posenc_attention_desc amid = attention_desc(2, 4, 5, 4500, 16);
  amid.kv_heads = 2;
  amid.sliding_window = 700;
  expect_all_biases_match(GetParam(), amid, {{4500, 3000}, {5, 3}, {2000, 2390}}, false,
                          {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D},
                          false);
  posenc_attention_desc padded = masked_padded_batch();
  padded.sliding_window = 9;
  expect_all_biases_match(GetParam(), padded, kPaddedSequences, true, kBiasesWithQ, false);
}

// A 2D relative bias over a 48 x 48 map (2304 keys: several key blocks),
// with a window of 100, causal and on both sides: each task makes the map's
// logits at its first key block, past key 0; the same bits at 1, 2 and 3
// threads.
TEST_P(AttentionAllOptions, SlidingWindowOverA2dMap) {
  for (int causal : {1, 0}) {
    posenc_attention_desc d = attention_desc(1, 2, 48 * 48, 48 * 48, 16);
    d.bias = POSENC_BIAS_RELATIVE_2D;
    d.map_height = d.map_width = 48;
    d.tables_per_head = 1;
    d.causal = causal;
    d.sliding_window = 100;
    const AttentionTensors call = call_of(d, {}, false);
    EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                   reference::attention(d, call.reference()), call, 1e-5, 1e-4))
        << "causal " << causal;
    EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
  }
}

// NaN in the keys before the windows (their k rows) never reaches a row; a
// window wider than any position (2^63 - 1, queries from -5) is no window,
// bit for bit, causal or not.
TEST_P(AttentionAllOptions, SlidingWindowEdges) {
  posenc_attention_desc d = attention_desc(1, 2, 70, 3000, 16);
  d.causal = 1;
  d.query_offset = 2930;
  d.sliding_window = 300;
  AttentionTensors call = call_of(d, {}, false);
  std::vector<float>& buffer = call.values(Tensor::q);  // q, k and v, one after another
  const size_t k_start = size_t(call.get(Tensor::k) - buffer.data());
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t j = 0; j < 2930 - 300 + 1; ++j) {
      buffer[k_start + size_t((h * 3000 + j) * 16 + 3)] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  const std::vector<float> got = run(context(), call, false);
  for (float x : got) ASSERT_TRUE(std::isfinite(x));
  EXPECT_TRUE(close_to_reference(got, reference::attention(d, call.reference()), call, 1e-5, 1e-4));

  for (int causal : {1, 0}) {
    posenc_attention_desc wide = attention_desc(1, 2, 10, 10, 16);
    wide.causal = causal;
    wide.query_offset = -5;
    const AttentionTensors plain = call_of(wide, {}, false);
    wide.sliding_window = INT64_MAX;
    const AttentionTensors windowed = call_of(wide, {}, false);
    const std::vector<float> want = run(context(), plain, false);
    const std::vector<float> got_wide = run(context(), windowed, false);
    EXPECT_EQ(std::memcmp(want.data(), got_wide.data(), want.size() * sizeof(float)), 0);
    EXPECT_TRUE(close_to_reference(got_wide, reference::attention(wide, windowed.reference()),
                                   windowed, 1e-5, 1e-4));
  }
}

// The serving shapes an option is tried on, set on each desc by `with`: a
// causal prefill of 300 tokens with a sliding window of 64; decode steps of
// two sequences, their keys split into ranges; 5 queries of 8 sequences
// with the query heads stacked on their kv head (BTHD); with
// `padded_biases`, the masked padded batch of packed views, causal or not.
template <typename With>
void expect_serving_shapes_match(posenc_isa isa, With with,
                                 std::initializer_list<posenc_attention_bias> biases,
                                 std::initializer_list<posenc_attention_bias> padded_biases,
                                 bool padded_causal) {
  posenc_attention_desc windowed = attention_desc(2, 4, 300, 300, 16);
  windowed.kv_heads = 2;
  windowed.sliding_window = 64;
  with(windowed);
  expect_all_biases_match(isa, windowed, {}, false, biases);
  posenc_attention_desc decode = attention_desc(2, 4, 3, 4500, 16);
  decode.kv_heads = 1;
  with(decode);
  expect_all_biases_match(isa, decode, {{4500, 2100}, {3, 2}, {4497, 2098}}, false, biases);
  posenc_attention_desc stacked = attention_desc(8, 64, 5, 90, 16);
  stacked.kv_heads = 8;
  stacked.layout = POSENC_LAYOUT_BTHD;
  with(stacked);
  expect_all_biases_match(isa, stacked,
                          {{90, 60, 0, 1, 90, 45, 33, 89},
                           {5, 3, 0, 1, 5, 2, 5, 4},
                           {85, 57, 5, 0, 20, 43, -3, 85}},
                          false, biases);
  posenc_attention_desc padded = masked_padded_batch();
  with(padded);
  expect_all_biases_match(isa, padded, kPaddedSequences, true, padded_biases, padded_causal);
}

// Sinks (gpt-oss), a logit per head, on the serving shapes: the merge of
// split keys adds the sink once, stacked heads' rows read their own head's
// sink, rows masked everywhere stay zero.
TEST_P(AttentionAllOptions, Sinks) {
  expect_serving_shapes_match(
      GetParam(), [](posenc_attention_desc& d) { d.sinks = 1; },
      {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D}, kBiasesWithQ, true);
}

// The logit soft cap (Gemma 2's) on the serving shapes, at caps small
// enough to bend these logits, the larger with sinks.
TEST_P(AttentionAllOptions, Softcap) {
  for (const auto& [cap, sinks] : {std::pair<float, int>{0.3f, 0}, {2.0f, 1}}) {
    SCOPED_TRACE("softcap " + std::to_string(cap) + " sinks " + std::to_string(sinks));
    expect_serving_shapes_match(
        GetParam(),
        [cap = cap, sinks = sinks](posenc_attention_desc& d) {
          d.softcap = cap;
          d.sinks = sinks;
        },
        {POSENC_BIAS_NONE}, {POSENC_BIAS_NONE}, false);
  }
}

// A sink of -inf is no sink, bit for bit (its weight is exactly 0); one far
// above every logit takes nearly all the weight: the rows go to zero, finite
// (outputs near 1e-35 as the reference's; subnormal ones may flush, as
// NEON under qemu does), and one of +inf takes it all (zeros).
TEST_P(AttentionAllOptions, SinkEdges) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc d = attention_desc(1, 3, 40, 40, 16);
    d.causal = 1;
    d.dtype = d.out_dtype = dtype;
    const std::vector<float> plain = run(context(), call_of(d, {}, false), false);
    d.sinks = 1;
    AttentionTensors call = call_of(d, {}, false);
    call.set(Tensor::sinks, std::vector<float>(3, -std::numeric_limits<float>::infinity()));
    const std::vector<float> none = run(context(), call, false);
    EXPECT_EQ(std::memcmp(plain.data(), none.data(), plain.size() * sizeof(float)), 0);
    call.set(Tensor::sinks, {60.0f, 0.0f, 80.0f});
    const std::vector<float> got = run(context(), call, false);
    const std::vector<double> want = reference::attention(d, call.reference());
    EXPECT_TRUE(close_to_reference(got, want, call, 1e-5, 1e-4));
    for (int64_t h : {0, 2}) {
      for (int64_t i = 0; i < 40 * 16; ++i) {
        const size_t at = size_t(h * 40 * 16 + i);
        ASSERT_TRUE(std::isfinite(got[at]) && std::fabs(got[at]) < 1e-20f) << h << " " << i;
        if (dtype == POSENC_F32) {  // (bf16 outputs: rounded once more)
          ASSERT_NEAR(got[at], want[at],
                      1e-3 * std::fabs(want[at]) + std::numeric_limits<float>::min())
              << h << " " << i;
        }
      }
    }
    call.set(Tensor::sinks, {std::numeric_limits<float>::infinity(), 0.0f, 1.0f});
    const std::vector<float> all = run(context(), call, false);
    for (int64_t i = 0; i < 40 * 16; ++i) ASSERT_EQ(all[size_t(i)], 0.0f) << i;
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionAllOptions);

// softcap is finite and not negative, within the floats' range of the
// softmax's scale, and not with the kinds whose logits q multiplies.
TEST(AttentionSoftcapErrors, RefusedNegativeNonFiniteOrWithABiasOfQ) {
  posenc_attention_desc d = attention_desc(1, 2, 8, 8, 16);
  size_t bytes = 0;
  for (float cap : {-1.0f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    d.softcap = cap;
    EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(posenc_last_error()).find("desc->softcap must be finite and >= 0"),
              std::string::npos)
        << posenc_last_error();
  }
  // Caps whose ratio to the softmax's scale is no normal float (at scale
  // 0.125 and at 2^-30, where the softmax applies 1).
  for (auto [scale, cap] : {std::pair{0.125f, 5e37f}, {0.125f, 1e-39f}, {0x1p-30f, 1e-39f}}) {
    d.scale = scale;
    d.softcap = cap;
    EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(posenc_last_error()).find("is too far from the scale"),
              std::string::npos)
        << posenc_last_error();
  }
  d.scale = 0.125f;
  d.softcap = 30.0f;
  d.bias = POSENC_BIAS_ABSOLUTE;
  EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(posenc_last_error()).find("desc->softcap caps scale q.k alone"),
            std::string::npos)
      << posenc_last_error();
  d.bias = POSENC_BIAS_ALIBI;
  EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_OK)
      << posenc_last_error();
}

// A sliding window is not negative.
TEST(AttentionWindowErrors, RefusedNegative) {
  posenc_attention_desc d = attention_desc(1, 2, 8, 8, 16);
  size_t bytes = 0;
  d.sliding_window = -1;
  EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(posenc_last_error()).find("desc->sliding_window"), std::string::npos);
  d.sliding_window = 4;
  EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_OK);
  d.causal = 1;
  EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_OK);
}

// Under a sliding window the key blocks follow the window (rounded up to 32
// keys, 128 to 1024) and the query blocks stay 64 rows: gpt-oss's window of
// 128 over 4096 keys, Mistral's 4096 over 16384, a window of 1; one of all
// the keys is none.
TEST(AttentionWindowBlocks, FollowTheWindow) {
  const auto blocks = [](int64_t kv_len, int64_t window) {
    posenc_attention_desc d = attention_desc(1, 8, kv_len, kv_len, 64);
    d.causal = 1;
    d.sliding_window = window;
    const ops::AttentionBlocking b =
        ops::plan_attention(ops::make_attention_problem(d), 2, POSENC_ISA_AVX2).blocking;
    return std::pair<int64_t, int64_t>(b.key_block, b.query_block);
  };
  EXPECT_EQ(blocks(4096, 128), std::make_pair(int64_t(128), int64_t(64)));
  EXPECT_EQ(blocks(4096, 100), std::make_pair(int64_t(128), int64_t(64)));
  EXPECT_EQ(blocks(4096, 300), std::make_pair(int64_t(320), int64_t(64)));
  EXPECT_EQ(blocks(16384, 4096), std::make_pair(int64_t(1024), int64_t(64)));
  EXPECT_EQ(blocks(4096, 1), std::make_pair(int64_t(128), int64_t(64)));
  EXPECT_EQ(blocks(300, 300), blocks(300, 0));
  EXPECT_EQ(blocks(300, 0), std::make_pair(int64_t(300), int64_t(160)));
}

// A small valid call whose options' flags and tensors the error tests set.
class AttentionOptionErrors : public ::testing::Test {
 protected:
  AttentionOptionErrors() {
    t_.q = t_.k = t_.v = x_.data();
    t_.out = out_.data();
  }
  // The call fails with `want`, its message naming `name`, nothing written.
  void fails(posenc_status want, const char* name) {
    EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, nullptr, 0), want, name));
    for (float y : out_) ASSERT_EQ(y, 7.0f);
  }
  void runs() {
    EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_OK) << posenc_last_error();
  }
  // desc->name is a flag (2 refused), and tensors->name is given exactly
  // when it is 1 (`given` then), out overlapping none of it; leaves both set.
  void checks_flag_and_tensor(int& flag, const void*& tensor, const float* given,
                              const std::string& name) {
    flag = 2;
    tensor = given;
    fails(POSENC_ERROR_INVALID_ARGUMENT, ("desc->" + name).c_str());
    flag = 0;
    fails(POSENC_ERROR_INVALID_ARGUMENT,
          ("tensors->" + name + " must be NULL unless " + name + " is 1").c_str());
    flag = 1;
    tensor = nullptr;
    fails(POSENC_ERROR_NULL_POINTER, ("tensors->" + name).c_str());
    tensor = out_.data() + 1;
    fails(POSENC_ERROR_ALIASING, ("tensors->" + name).c_str());
    tensor = given;
  }

  posenc_attention_desc d_ = attention_desc(1, 2, 8, 8, 16);
  const std::vector<float> x_ = std::vector<float>(2 * 8 * 16, 0.5f);
  std::vector<float> out_ = std::vector<float>(x_.size(), 7.0f);
  posenc_attention_tensors t_{};
};

// sinks is a flag, and its tensor is given exactly when it is set.
TEST_F(AttentionOptionErrors, Sinks) {
  const std::vector<float> sinks(2, 1.0f);
  checks_flag_and_tensor(d_.sinks, t_.sinks, sinks.data(), "sinks");
  runs();
}

// relative_query_bias is a flag of RELATIVE_1D, and its tensor [heads,
// head_dim] is given exactly when it is set, out overlapping none of it.
TEST_F(AttentionOptionErrors, RelativeQueryBias) {
  const std::vector<float> table(15 * 16, 0.25f), u(2 * 16, 1.0f);
  d_.bias = POSENC_BIAS_RELATIVE_1D;
  t_.table = table.data();
  checks_flag_and_tensor(d_.relative_query_bias, t_.relative_query_bias, u.data(),
                         "relative_query_bias");
  for (posenc_attention_bias other :
       {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_2D, POSENC_BIAS_T5}) {
    d_.bias = other;
    fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_query_bias shifts q in the relative");
  }
  d_.bias = POSENC_BIAS_RELATIVE_1D;
  runs();
}

// DISENTANGLED: its span or buckets, both tables (key_table only with it),
// and the options it does not take.
TEST_F(AttentionOptionErrors, Disentangled) {
  const std::vector<float> table(2 * 16 * 16, 0.25f);
  d_.bias = POSENC_BIAS_DISENTANGLED;
  t_.table = t_.key_table = table.data();
  // (A call that ran wrote out: the refusals after it must find 7s again.)
  const auto runs_and_refills = [&] {
    runs();
    std::fill(out_.begin(), out_.end(), 7.0f);
  };
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->max_distance must be >= 1");
  d_.max_distance = 8;  // S = 8: 16 rows
  runs_and_refills();
  d_.num_buckets = 1;
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->num_buckets must be 0 or in [2, 2^24]");
  d_.num_buckets = 8;  // m = 4: ln(7 / 4) < 3 ln(5 / 4) <= ln(8 / 4)
  d_.max_distance = 8;
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->max_distance must be at least 9");
  d_.max_distance = 9;
  runs_and_refills();
  t_.key_table = nullptr;
  fails(POSENC_ERROR_NULL_POINTER, "tensors->key_table");
  t_.key_table = out_.data() + 3;
  fails(POSENC_ERROR_ALIASING, "tensors->key_table");
  t_.key_table = table.data();
  d_.relative_values = 1;
  t_.value_table = table.data();
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_values is not available with DISENTANGLED");
  d_.relative_values = 0;
  t_.value_table = nullptr;
  d_.softcap = 30.0f;
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->softcap caps scale q.k alone");
  d_.softcap = 0.0f;
  d_.relative_query_bias = 1;
  t_.relative_query_bias = table.data();
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_query_bias shifts q");
  d_.relative_query_bias = 0;
  t_.relative_query_bias = nullptr;
  runs_and_refills();
  d_.bias = POSENC_BIAS_RELATIVE_1D;
  d_.num_buckets = 0;
  fails(POSENC_ERROR_INVALID_ARGUMENT,
        "tensors->key_table must be NULL unless bias is DISENTANGLED");
  d_.bias = POSENC_BIAS_NONE;
  d_.max_distance = 0;
  t_.table = t_.key_table = nullptr;
  d_.num_buckets = 4;
  fails(POSENC_ERROR_INVALID_ARGUMENT, "desc->num_buckets must be 0 unless bias is T5 or");
}

// bias_gate is a flag of TABLE_1D, T5 and ALIBI, and its tensor [batch,
// heads, q_len] is given exactly when it is set, out overlapping none of it.
TEST_F(AttentionOptionErrors, BiasGate) {
  const std::vector<float> buckets(32 * 2, 0.25f), gate(2 * 8, 1.5f);
  d_.bias = POSENC_BIAS_T5;
  d_.num_buckets = 32;
  d_.max_distance = 128;
  t_.table = buckets.data();
  checks_flag_and_tensor(d_.bias_gate, t_.bias_gate, gate.data(), "bias_gate");
  runs();
  std::fill(out_.begin(), out_.end(), 7.0f);
  d_.num_buckets = d_.max_distance = 0;
  t_.table = nullptr;
  for (posenc_attention_bias other : {POSENC_BIAS_NONE, POSENC_BIAS_TABLE_2D}) {
    d_.bias = other;
    fails(POSENC_ERROR_INVALID_ARGUMENT,
          "desc->bias_gate gates the bias of TABLE_1D, T5 or ALIBI only");
  }
  d_.bias = POSENC_BIAS_RELATIVE_1D;
  t_.table = buckets.data();
  fails(POSENC_ERROR_INVALID_ARGUMENT,
        "desc->bias_gate gates the bias of TABLE_1D, T5 or ALIBI only");
  d_.bias = POSENC_BIAS_ALIBI;
  t_.table = nullptr;
  runs();
}

}  // namespace
}  // namespace posenc::test
