// The bias gate of posenc/attention.h (each query row's TABLE_1D, T5 or
// ALiBi bias times its gate): WavLM's gated relative position bias against
// its definition (transformers' WavLMAttention: its buckets in fp32, the
// gate per batch item, head and query, the padded keys), and the double
// reference on the options a gate meets (decode steps with stacked heads,
// split keys, per-sequence offsets, a mask, BTHD) on every ISA path, fp32
// and bf16. (Its errors: attention_options_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/bias/t5_bucket.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

class AttentionGate : public IsaTest {};

constexpr int64_t kWavLMBuckets = 320, kWavLMDistance = 800;

// WavLM's _relative_positions_bucket of d = key - query, step by step in
// fp32 as its PyTorch code: half the buckets per direction, the later keys
// in the upper half, max_exact = half / 2 exact distances, then
// max_exact + log(n / max_exact) / log(max_distance / max_exact) *
// (half - max_exact) added in fp32 before the truncation (T5's code
// truncates first), at most half - 1.
int64_t wavlm_bucket(int64_t d) {
  const int64_t half = kWavLMBuckets / 2, max_exact = half / 2;
  const int64_t n = d < 0 ? -d : d;
  const int64_t first = d > 0 ? half : 0;
  if (n < max_exact) return first + n;
  const float range = float(std::log(double(kWavLMDistance) / double(max_exact)));
  const float large = std::log(float(n) / float(max_exact)) / range * float(half - max_exact);
  return first + std::min(int64_t(float(max_exact) + large), half - 1);
}

// posenc's T5 buckets of WavLM's settings (bidirectional) are WavLM's, at
// every distance of sequences up to 5000 frames (100 s of audio).
TEST(WavLMBuckets, AreT5BucketsOfItsSettings) {
  const ops::T5Buckets t5{kWavLMBuckets, kWavLMDistance, true};
  for (int64_t d = -5000; d <= 5000; ++d) ASSERT_EQ(t5.bucket(d), wavlm_bucket(d)) << d;
  // Worked out by hand: log(160 / 80) / log(10) * 80 = 24.08 -> 104 (and
  // the upper half's 264 for a key after the query); 799 -> 159, 800 on
  // the last bucket.
  EXPECT_EQ(wavlm_bucket(-160), 104);
  EXPECT_EQ(wavlm_bucket(160), 264);
  EXPECT_EQ(wavlm_bucket(-799), 159);
  EXPECT_EQ(wavlm_bucket(5000), 319);
}

posenc_attention_desc wavlm_desc(int64_t batch, int64_t heads, int64_t tokens,
                                 int64_t head_dim) {
  posenc_attention_desc d = attention_desc(batch, heads, tokens, tokens, head_dim);
  d.bias = POSENC_BIAS_T5;
  d.num_buckets = kWavLMBuckets;
  d.max_distance = kWavLMDistance;
  d.bidirectional = 1;
  d.bias_gate = 1;
  return d;
}

// q, k, v, the table [num_buckets, heads] (or ALiBi's slopes, TABLE_1D's
// rows) and gates in [low, high]. (ALiBi's logits grow with the distance:
// its distances here stay below 160.)
AttentionTensors gated_call(const posenc_attention_desc& d, Sequences s, uint32_t seed,
                            float low = 0.5f, float high = 3.0f) {
  AttentionTensors x(d, std::move(s));
  const int64_t kv_heads = d.kv_heads == 0 ? d.heads : d.kv_heads;
  x.fill(Tensor::q, size_t(d.batch * d.heads * d.q_len * d.head_dim), seed);
  x.fill(Tensor::k, size_t(d.batch * kv_heads * d.kv_len * d.head_dim), seed + 1);
  x.fill(Tensor::v, size_t(d.batch * kv_heads * d.kv_len * d.head_dim), seed + 2);
  const int64_t table = d.bias == POSENC_BIAS_T5         ? d.num_buckets * d.heads
                        : d.bias == POSENC_BIAS_TABLE_1D ? d.heads * (2 * d.max_distance + 1)
                                                         : d.heads;
  const bool alibi = d.bias == POSENC_BIAS_ALIBI;  // (slopes of 8 to 128 heads)
  x.fill(Tensor::table, size_t(table), seed + 3, alibi ? 0.01f : -2.0f, alibi ? 0.25f : 2.0f);
  x.fill(Tensor::bias_gate, d.bias_gate ? size_t(d.batch * d.heads * d.q_len) : 0, seed + 4, low,
         high);
  return x;
}

// WavLM's layer as its code computes it, per batch item and head:
// softmax(q k^T / sqrt(d) + gate[b, h, i] * rel_attn_embed[bucket(j - i), h],
// padded keys -inf) v; the padded queries' rows computed all the same.
std::vector<double> wavlm_layer(const AttentionTensors& call,
                                const std::vector<int64_t>& kv_lengths) {
  const posenc_attention_desc& d = call.desc();
  const int64_t H = d.heads, T = d.q_len, dh = d.head_dim;
  const float* table = call.get(Tensor::table);
  const float* gate = call.get(Tensor::bias_gate);
  std::vector<double> out;
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t head = (b * H + h) * T * dh;
      const float* q = call.get(Tensor::q) + head;
      const float* k = call.get(Tensor::k) + head;
      std::vector<double> scores(size_t(T * T));
      for (int64_t i = 0; i < T; ++i) {
        for (int64_t j = 0; j < T; ++j) {
          double s = 0.0;
          for (int64_t c = 0; c < dh; ++c) s += double(q[i * dh + c]) * double(k[j * dh + c]);
          const double bias = double(table[wavlm_bucket(j - i) * H + h]);
          scores[size_t(i * T + j)] =
              j < kv_lengths[size_t(b)]
                  ? s / std::sqrt(double(dh)) + double(gate[(b * H + h) * T + i]) * bias
                  : -std::numeric_limits<double>::infinity();
        }
      }
      const std::vector<double> o =
          softmax_rows_times(scores, T, T, call.get(Tensor::v) + head, dh);
      out.insert(out.end(), o.begin(), o.end());
    }
  }
  return out;
}

// WavLM's layers of 1 to 1000 frames (past max_distance), the second of a
// batch padded, against its code written out; fp32 and bf16.
TEST_P(AttentionGate, MatchesWavLM) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    for (const auto& [T, d] :
         {std::pair<int64_t, int64_t>{1, 16}, {2, 8}, {17, 64}, {299, 16}, {1000, 8}}) {
      posenc_attention_desc desc = wavlm_desc(2, 3, T, d);
      desc.dtype = desc.out_dtype = dtype;
      const std::vector<int64_t> kv_lengths = {T, (T + 1) / 2};
      SCOPED_TRACE(describe(desc));
      const AttentionTensors call = gated_call(desc, {kv_lengths, {}, {}}, uint32_t(T + d));
      EXPECT_TRUE(close_to_reference(run(context(), call, true), wavlm_layer(call, kv_lengths),
                                     call, 1e-5, 1e-4));
    }
  }
}

// Gated kinds against the reference: T5 (both directions), ALiBi (given and
// standard slopes, both directions), TABLE_1D within and past its K (an
// offset of 200 reaches past the line of +-134 distances: the far ones
// gated one by one); gates of either sign and zero; prime lengths, a
// padded batch with per-sequence offsets, a mask, BTHD; the same bits at
// 1, 2 and 3 threads.
TEST_P(AttentionGate, KindsMatchReference) {
  std::vector<posenc_attention_desc> descs;
  for (const int bidirectional : {0, 1}) {
    posenc_attention_desc t5 = wavlm_desc(3, 2, 67, 17);
    t5.num_buckets = 32;
    t5.max_distance = 40;
    t5.bidirectional = bidirectional;
    t5.causal = 1 - bidirectional;
    descs.push_back(t5);
    posenc_attention_desc alibi = attention_desc(3, 4, 67, 67, 17);
    alibi.bias = POSENC_BIAS_ALIBI;
    alibi.bias_gate = 1;
    alibi.bidirectional = bidirectional;
    alibi.causal = 1 - bidirectional;
    descs.push_back(alibi);
  }
  for (const int64_t K : {5, 300}) {
    posenc_attention_desc table_1d = attention_desc(3, 2, 67, 67, 17);
    table_1d.bias = POSENC_BIAS_TABLE_1D;
    table_1d.max_distance = K;
    table_1d.bias_gate = 1;
    table_1d.layout = POSENC_LAYOUT_BTHD;
    descs.push_back(table_1d);
  }
  uint32_t seed = 50;
  for (posenc_attention_desc d : descs) {
    for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
      d.dtype = d.out_dtype = dtype;
      SCOPED_TRACE(describe(d));
      const int64_t far = d.bias == POSENC_BIAS_ALIBI ? 90 : 200;
      const Sequences padded{{67, 40, 1}, {67, 31, 1}, {0, far, -50}};
      AttentionTensors call = gated_call(d, padded, ++seed, -1.5f, 2.5f);
      std::vector<float>& gates = call.values(Tensor::bias_gate);
      for (size_t g = 0; g < gates.size(); g += 7) gates[g] = 0.0f;
      if (d.bias == POSENC_BIAS_ALIBI && seed % 2 == 0) call.set(Tensor::table, {});
      EXPECT_TRUE(close_to_reference(run(context(), call, true),
                                     reference::attention(d, call.reference()), call, 1e-5,
                                     1e-4));
      EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
    }
  }
  posenc_attention_desc masked = wavlm_desc(2, 3, 45, 16);
  masked.mask_batch = 2;
  masked.mask_heads = 1;
  masked.mask_q_len = 45;
  AttentionTensors call = gated_call(masked, {}, 70);
  call.fill(Tensor::mask, size_t(2 * 45 * 45), 71, -3.0f, 1.0f);
  EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                 reference::attention(masked, call.reference()), call, 1e-5,
                                 1e-4));
}

// Decode steps: query heads stacked on grouped kv heads (each its own gate),
// keys split across tasks (one query against 3000 keys), T5's decoder
// buckets; fp32 and bf16.
TEST_P(AttentionGate, DecodeSteps) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    for (const auto& [q_len, kv_len] : {std::pair<int64_t, int64_t>{3, 700}, {1, 3000}}) {
      posenc_attention_desc d = wavlm_desc(2, 8, q_len, 16);
      d.kv_len = kv_len;
      d.kv_heads = 2;
      d.num_buckets = 32;
      d.max_distance = 128;
      d.bidirectional = 0;
      d.causal = 1;
      d.query_offset = kv_len - q_len;
      d.dtype = d.out_dtype = dtype;
      SCOPED_TRACE(describe(d));
      const AttentionTensors call = gated_call(d, {}, uint32_t(q_len + kv_len));
      EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                     reference::attention(d, call.reference()), call, 1e-5,
                                     1e-4));
      EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
    }
  }
}

// Gates of 1: the bits of the call without a gate, for each kind.
TEST_P(AttentionGate, GatesOfOneKeepTheBits) {
  posenc_attention_desc alibi = attention_desc(2, 3, 90, 90, 32);
  alibi.bias = POSENC_BIAS_ALIBI;
  posenc_attention_desc table_1d = alibi;
  table_1d.bias = POSENC_BIAS_TABLE_1D;
  table_1d.max_distance = 20;
  for (posenc_attention_desc d : {wavlm_desc(2, 3, 90, 32), alibi, table_1d}) {
    for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
      d.dtype = d.out_dtype = dtype;
      d.bias_gate = 1;
      SCOPED_TRACE(describe(d));
      const AttentionTensors gated = gated_call(d, {}, 9, 1.0f, 1.0f);
      d.bias_gate = 0;
      const AttentionTensors plain = gated_call(d, {}, 9);
      const std::vector<float> a = run(context(), gated, false);
      const std::vector<float> b = run(context(), plain, false);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionGate);

}  // namespace
}  // namespace posenc::test
