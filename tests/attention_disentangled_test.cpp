// DeBERTa's disentangled attention (posenc/attention.h, bias DISENTANGLED):
// against its definition as transformers' DebertaV2 computes it (log
// buckets in float32, the c2p and p2c gathers, the transposed p2c), the
// double reference on encoder and decoder shapes (padded batches, masks,
// grouped kv heads, BTHD, windows, sequence offsets past the buckets'
// range, long keys) on every ISA path, fp32 and bf16, and the rows of its
// rule worked out by hand. (Its errors: attention_options_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/bias.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/problem.hpp"
#include "ops/relative/disentangled_index.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

class AttentionDisentangled : public IsaTest {};

// The span S of the desc's tables (2S rows).
int64_t span_of(const posenc_attention_desc& d) {
  return d.num_buckets > 0 ? d.num_buckets : d.max_distance;
}

posenc_attention_desc deberta_desc(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                                   int64_t head_dim, int64_t buckets, int64_t max_distance) {
  posenc_attention_desc d = attention_desc(batch, heads, q_len, kv_len, head_dim);
  d.bias = POSENC_BIAS_DISENTANGLED;
  d.scale = float(1.0 / std::sqrt(3.0 * double(head_dim)));
  d.tables_per_head = 1;
  d.num_buckets = buckets;
  d.max_distance = max_distance;
  return d;
}

// q, k, v and both tables of the desc.
AttentionTensors deberta_call(const posenc_attention_desc& d, Sequences s, uint32_t seed) {
  AttentionTensors x(d, std::move(s));
  const int64_t kv_heads = d.kv_heads ? d.kv_heads : d.heads;
  const size_t table = size_t((d.tables_per_head ? d.heads : 1) * 2 * span_of(d) * d.head_dim);
  x.fill(Tensor::q, size_t(d.batch * d.heads * d.q_len * d.head_dim), seed);
  x.fill(Tensor::k, size_t(d.batch * kv_heads * d.kv_len * d.head_dim), seed + 1);
  x.fill(Tensor::v, size_t(d.batch * kv_heads * d.kv_len * d.head_dim), seed + 2);
  x.fill(Tensor::table, table, seed + 3);
  x.fill(Tensor::key_table, table, seed + 4);
  return x;
}

// transformers' make_log_bucket_position in float32, as it evaluates it
// (the distances' magnitudes divided by mid in float32, the logarithms and
// the ceil in float32), and build_relative_position's query minus key.
int64_t deberta_bucket(int64_t r, int64_t bucket_size, int64_t max_position) {
  const int64_t mid = bucket_size / 2;
  const int64_t abs_pos = (r < mid && r > -mid) ? mid - 1 : std::abs(r);
  if (abs_pos <= mid) return r;
  const float log_pos =
      std::ceil(std::log(float(abs_pos) / float(mid)) /
                std::log(float(double(max_position - 1) / double(mid))) * float(mid - 1)) +
      float(mid);
  return int64_t(r > 0 ? log_pos : -log_pos);
}

// One head of DisentangledSelfAttention (T queries and keys, q, k, v
// [T, d], pos_key Kr and pos_query Qr [2S, d]): c2p = (q Kr^T) gathered at
// clamp(rel + S, 0, 2S-1), p2c = (k Qr^T) gathered at clamp(-rel + S, ..)
// along its rows' keys, then transposed; (q k^T + c2p + p2c) / sqrt(3d),
// softmax, times v. rel[i][j] = bucket(i - j) (no buckets: i - j).
std::vector<double> deberta_head(const float* q, const float* k, const float* v,
                                 const float* Kr, const float* Qr, int64_t T, int64_t d,
                                 int64_t buckets, int64_t max_position) {
  const int64_t S = buckets > 0 ? buckets : max_position;
  const auto rel = [&](int64_t i, int64_t j) {
    return buckets > 0 ? deberta_bucket(i - j, buckets, max_position) : i - j;
  };
  const auto product = [d](const float* a, const float* b) {
    double s = 0.0;
    for (int64_t c = 0; c < d; ++c) s += double(a[c]) * double(b[c]);
    return s;
  };
  // c2p_att [T, 2S] and p2c_att [T, 2S], as the model's two bmm.
  std::vector<double> c2p_att(size_t(T * 2 * S)), p2c_att(size_t(T * 2 * S));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t r = 0; r < 2 * S; ++r) {
      c2p_att[size_t(t * 2 * S + r)] = product(q + t * d, Kr + r * d);
      p2c_att[size_t(t * 2 * S + r)] = product(k + t * d, Qr + r * d);
    }
  }
  const auto clamp_row = [S](int64_t x) { return std::clamp<int64_t>(x + S, 0, 2 * S - 1); };
  std::vector<double> scores(size_t(T * T));
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t j = 0; j < T; ++j) {
      const double c2p = c2p_att[size_t(i * 2 * S + clamp_row(rel(i, j)))];
      // p2c gathered at [j][i] = p2c_att[j][clamp(-rel(j, i) + S)], read at [i][j].
      const double p2c = p2c_att[size_t(j * 2 * S + clamp_row(-rel(j, i)))];
      scores[size_t(i * T + j)] =
          (product(q + i * d, k + j * d) + c2p + p2c) / std::sqrt(3.0 * double(d));
    }
  }
  return softmax_rows_times(scores, T, T, v, d);
}

// posenc takes DebertaV2's layer as its tables stand: the output of the
// model's own steps, per head, with log buckets reached and clamped, and
// without buckets, in both ways (BothWaysMatchReference).
TEST_P(AttentionDisentangled, MatchesDebertaV2) {
  struct Case {
    int64_t T, buckets, max_position;
  };
  for (const Case& c : {Case{1, 16, 32}, Case{2, 16, 32}, Case{17, 16, 32}, Case{70, 16, 32},
                        Case{300, 256, 512}, Case{20, 0, 8}, Case{45, 7, 12}, Case{70, 16, 20},
                        Case{400, 256, 345}, Case{70, 256, 512}}) {
    const int64_t H = 2, d = 16, S = c.buckets > 0 ? c.buckets : c.max_position;
    SCOPED_TRACE("T " + std::to_string(c.T) + " buckets " + std::to_string(c.buckets));
    const posenc_attention_desc desc = deberta_desc(1, H, c.T, c.T, d, c.buckets, c.max_position);
    const AttentionTensors call = deberta_call(desc, {}, uint32_t(c.T));
    const std::vector<float> got = run(context(), call, false);
    std::vector<double> want;
    for (int64_t h = 0; h < H; ++h) {
      const std::vector<double> head = deberta_head(
          call.get(Tensor::q) + h * c.T * d, call.get(Tensor::k) + h * c.T * d,
          call.get(Tensor::v) + h * c.T * d, call.get(Tensor::table) + h * 2 * S * d,
          call.get(Tensor::key_table) + h * 2 * S * d, c.T, d, c.buckets, c.max_position);
      want.insert(want.end(), head.begin(), head.end());
    }
    EXPECT_TRUE(close_to_reference(got, want, call, 1e-5, 1e-4));
  }
}

// The rule's rows worked out by hand for DeBERTa-v3 (B 256, M 512: m 128,
// ln(511/128) = 1.38434): |r| <= 128 linear; r = 129: ceil(ln(129/128) /
// 1.38434 * 127) = ceil(0.714) = 1, 129; r = 300: ceil(78.14) = 79, 207;
// r = 511: 127, 255 (row 511, the last); r = 512: 256, clamped; and
// without buckets (S 8) the clamp at -8 and 7.
TEST(DisentangledRows, WorkedOutByHand) {
  const posenc_attention_desc v3 = deberta_desc(1, 1, 1, 1, 1, 256, 512);
  const std::pair<int64_t, int64_t> rows[] = {
      {0, 256},   {1, 257},   {-1, 255},  {128, 384}, {-128, 128},  {129, 385},
      {-129, 127}, {300, 463}, {-300, 49}, {511, 511}, {-511, 1},   {512, 511},
      {-512, 0},  {1 << 30, 511}, {-(int64_t(1) << 40), 0}};
  for (const auto& [r, row] : rows) EXPECT_EQ(reference::disentangled_row(v3, r), row) << r;
  const posenc_attention_desc plain = deberta_desc(1, 1, 1, 1, 1, 0, 8);
  for (const auto& [r, row] : {std::pair<int64_t, int64_t>{0, 8}, {7, 15}, {8, 15}, {-8, 0},
                               {-9, 0}, {-3, 5}}) {
    EXPECT_EQ(reference::disentangled_row(plain, r), row) << r;
  }
}

// The least max_distance the API takes for B buckets is the least whose
// rows step by at most one per distance (what the attention's windows of
// table rows rely on): at it and past it every step is 0 or 1, and one
// below it a step skips a row.
TEST(DisentangledRows, LeastMaxDistanceSkipsNoRow) {
  for (int64_t buckets : {2, 3, 7, 16, 64, 256, 1000}) {
    const int64_t least = least_bucketed_max_distance(buckets);
    for (int64_t max_distance : {least - 1, least, least + 1, 4 * least}) {
      if (max_distance < buckets / 2 + 2) continue;
      const DisentangledIndex index = disentangled_index(buckets, max_distance);
      int64_t widest = 0;
      for (int64_t r = -8 * max_distance; r < 8 * max_distance; ++r) {
        const int64_t step = index.row(r + 1) - index.row(r);
        ASSERT_GE(step, 0) << r;
        widest = std::max(widest, step);
      }
      SCOPED_TRACE("B " + std::to_string(buckets) + " M " + std::to_string(max_distance));
      EXPECT_EQ(widest, max_distance < least ? 2 : 1);
    }
  }
  // (The fuzzer's and the random test's draws count on these.)
  for (const auto& [buckets, least] : {std::pair<int64_t, int64_t>{2, 3}, {4, 4}, {7, 7},
                                       {8, 9}, {16, 20}, {256, 345}}) {
    EXPECT_EQ(least_bucketed_max_distance(buckets), least) << buckets;
  }
}

// Encoder shapes against the reference: prime and tail lengths, head sizes
// 1, 17 and 64, a padded batch (kv_lengths and q_lengths), shared tables,
// the logits of the unscaled q, fp32 and bf16, the same bits at 1, 2 and 3
// threads.
TEST_P(AttentionDisentangled, EncoderShapesMatchReference) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    for (const auto& [T, d] : {std::pair<int64_t, int64_t>{1, 17}, {31, 1}, {67, 64},
                               {200, 17}}) {
      posenc_attention_desc desc = deberta_desc(3, 2, T, T, d, 32, 64);
      desc.dtype = desc.out_dtype = dtype;
      desc.tables_per_head = int(T != 67);
      desc.bias_uses_scaled_q = int(T != 31);
      const Sequences padded{{T, (T + 1) / 2, 1}, {T, T / 3 + 1, 1}, {}};
      SCOPED_TRACE(describe(desc));
      const AttentionTensors call = deberta_call(desc, padded, uint32_t(T * 7 + d));
      EXPECT_TRUE(close_to_reference(run(context(), call, true),
                                     reference::attention(desc, call.reference()), call, 1e-5,
                                     1e-4));
      EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
    }
  }
}

// The other options: a key-padding mask, grouped kv heads in BTHD, a
// sliding window, causal decode steps at an offset (stacked heads), query
// offsets per sequence far past the buckets' range (and below 0), long
// keys in bf16, no buckets.
TEST_P(AttentionDisentangled, OptionsMatchReference) {
  std::vector<posenc_attention_desc> descs;
  posenc_attention_desc masked = deberta_desc(2, 3, 40, 40, 24, 16, 40);
  masked.mask_batch = 2;
  masked.mask_heads = 1;
  masked.mask_q_len = 1;
  descs.push_back(masked);
  posenc_attention_desc grouped = deberta_desc(2, 8, 50, 50, 16, 0, 12);
  grouped.kv_heads = 2;
  grouped.layout = POSENC_LAYOUT_BTHD;
  grouped.sliding_window = 9;
  descs.push_back(grouped);
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc decode = deberta_desc(2, 8, 3, 700, 16, 64, 256);
    decode.kv_heads = 2;
    decode.causal = 1;
    decode.query_offset = 697;
    decode.dtype = decode.out_dtype = dtype;
    descs.push_back(decode);
  }
  posenc_attention_desc long_keys = deberta_desc(1, 2, 64, 3000, 32, 256, 512);
  long_keys.dtype = long_keys.out_dtype = POSENC_BF16;
  descs.push_back(long_keys);
  for (const posenc_attention_desc& d : descs) {
    SCOPED_TRACE(describe(d));
    AttentionTensors call = deberta_call(d, {}, uint32_t(d.q_len + d.heads));
    if (d.mask_batch > 0) call.set(Tensor::mask, mask_values(size_t(2 * 40), 8));
    EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                   reference::attention(d, call.reference()), call, 1e-5, 1e-4));
  }
  posenc_attention_desc offsets = deberta_desc(3, 2, 33, 33, 16, 16, 32);
  offsets.causal = 1;
  const Sequences far{{}, {}, {1000000, -50, 5}};
  SCOPED_TRACE(describe(offsets));
  const AttentionTensors call = deberta_call(offsets, far, 77);
  EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                 reference::attention(offsets, call.reference()), call, 1e-5,
                                 1e-4));
  EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
}

// Both ways of making the logits (ops/attention/bias.hpp) on the shapes
// that take them, and their results: a long encoder's query blocks take
// the whole table (padded and masked too, fp32 and bf16, at 1 to 3
// threads, a new call's keys not mistaken for the last's), short encoders
// and decode steps take the block pairs' windows.
TEST_P(AttentionDisentangled, BothWaysMatchReference) {
  const auto whole_table = [](const posenc_attention_desc& d) {
    const ops::AttentionProblem p = ops::make_attention_problem(d);
    const ops::AttentionBlocking b = ops::plan_attention(p, 2, POSENC_ISA_AVX2).blocking;
    return ops::disentangled_way(p, b.query_block, b.key_block).whole_table;
  };
  posenc_attention_desc encoder = deberta_desc(2, 3, 512, 512, 24, 256, 512);
  EXPECT_TRUE(whole_table(encoder));
  EXPECT_TRUE(whole_table(deberta_desc(1, 2, 70, 70, 16, 16, 32)));  // 32 rows
  EXPECT_FALSE(whole_table(deberta_desc(1, 2, 70, 70, 16, 256, 512)));
  posenc_attention_desc step = deberta_desc(1, 4, 1, 600, 16, 256, 512);
  step.query_offset = 599;
  EXPECT_FALSE(whole_table(step));
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    encoder.dtype = encoder.out_dtype = dtype;
    encoder.mask_batch = 2;
    encoder.mask_heads = 1;
    encoder.mask_q_len = 1;
    SCOPED_TRACE(describe(encoder));
    AttentionTensors call = deberta_call(encoder, {{512, 300}, {512, 200}, {}}, 60);
    call.set(Tensor::mask, mask_values(size_t(2 * 512), 61));
    EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                   reference::attention(encoder, call.reference()), call, 1e-5,
                                   1e-4));
    EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
    // The same workspace and thread, new keys: their logits, not the kept ones.
    call.fill(Tensor::k, size_t(2 * 3 * 512 * 24), 62);
    EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                   reference::attention(encoder, call.reference()), call, 1e-5,
                                   1e-4));
  }
  const AttentionTensors step_call = deberta_call(step, {}, 63);
  EXPECT_TRUE(close_to_reference(run(context(), step_call, false),
                                 reference::attention(step, step_call.reference()), step_call,
                                 1e-5, 1e-4));
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionDisentangled);

}  // namespace
}  // namespace posenc::test
