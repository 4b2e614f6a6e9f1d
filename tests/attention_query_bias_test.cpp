// The relative query bias of posenc/attention.h (RELATIVE_1D's logits take
// q + u_h): the Conformer's relative attention against its definition (the
// pad-and-reshape shift of the position logits), the double reference on
// Conformer shapes (padded batches, per-head and shared tables, clipped
// tables, streaming chunks, decode steps, long keys, relative values, the
// logits of the unscaled q) on every ISA path, fp32 and bf16. (Its errors:
// attention_options_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

class AttentionQueryBias : public IsaTest {};

// q, k, v and the desc's 1D table (per head and unclipped, q_len = kv_len
// = T: the Conformer's [H, 2T-1, d] projected positions), and u where the
// desc takes it.
AttentionTensors conformer_call(const posenc_attention_desc& d, Sequences s, uint32_t seed) {
  AttentionTensors x(d, std::move(s));
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  x.fill(Tensor::q, size_t(d.batch * d.heads * d.q_len * d.head_dim), seed);
  x.fill(Tensor::k, size_t(d.batch * d.heads * d.kv_len * d.head_dim), seed + 1);
  x.fill(Tensor::v, size_t(d.batch * d.heads * d.kv_len * d.head_dim), seed + 2);
  x.fill(Tensor::table, size_t(heads * relative_rows(d, x.sequences().query_offsets) * d.head_dim),
         seed + 3);
  x.fill(Tensor::relative_query_bias, d.relative_query_bias ? size_t(d.heads * d.head_dim) : 0,
         seed + 4, -2.0f, 2.0f);
  return x;
}

posenc_attention_desc conformer_desc(int64_t batch, int64_t heads, int64_t q_len,
                                     int64_t kv_len, int64_t head_dim) {
  posenc_attention_desc d = attention_desc(batch, heads, q_len, kv_len, head_dim);
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.tables_per_head = 1;
  d.relative_query_bias = 1;
  return d;
}

// The Conformer's scores as NeMo's RelPositionMultiHeadAttention computes
// them, for one head of T tokens (q, k [T, d], P [2T-1, d] ordered from
// distance T-1 down to -(T-1), a and b pos_bias_u and pos_bias_v): ac = (q
// + a) k^T; bd = (q + b) P^T [T, 2T-1], a column of zeros padded on its
// left, the [T, 2T] buffer read as [2T, T], its first row dropped, read back
// as [T, 2T-1] and its first T columns kept (Transformer-XL's shift);
// (ac + bd) / sqrt(d), softmax, times v.
std::vector<double> conformer_head(const float* q, const float* k, const float* v,
                                        const float* P, const float* a, const float* b,
                                        int64_t T, int64_t d) {
  const int64_t L = 2 * T - 1;
  std::vector<double> padded(size_t(T * (L + 1)), 0.0);  // [T, 2T]: zeros, then bd
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t r = 0; r < L; ++r) {
      double s = 0.0;
      for (int64_t c = 0; c < d; ++c) s += (double(q[i * d + c]) + b[c]) * P[r * d + c];
      padded[size_t(i * (L + 1) + 1 + r)] = s;
    }
  }
  // As [2T, T] without its first row (T elements), read as [T, 2T-1].
  const double* shifted = padded.data() + T;
  std::vector<double> scores(size_t(T * T));
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t j = 0; j < T; ++j) {
      double ac = 0.0;
      for (int64_t c = 0; c < d; ++c) ac += (double(q[i * d + c]) + a[c]) * k[j * d + c];
      scores[size_t(i * T + j)] = (ac + shifted[i * L + j]) / std::sqrt(double(d));
    }
  }
  return softmax_rows_times(scores, T, T, v, d);
}

// posenc takes the Conformer's layer as q + a, u = b - a and P as the
// unclipped table: the same output as its code's, per head.
TEST_P(AttentionQueryBias, MatchesConformerShift) {
  for (int64_t T : {1, 2, 5, 37, 70}) {
    const int64_t H = 3, d = 16;
    SCOPED_TRACE("T " + std::to_string(T));
    const std::vector<float> q = random_floats(size_t(H * T * d), 1, -1.0f, 1.0f);
    const std::vector<float> P = random_floats(size_t(H * (2 * T - 1) * d), 4, -1.0f, 1.0f);
    const std::vector<float> a = random_floats(size_t(H * d), 5, -1.0f, 1.0f);
    const std::vector<float> b = random_floats(size_t(H * d), 6, -1.0f, 1.0f);
    posenc_attention_desc desc = conformer_desc(1, H, T, T, d);
    AttentionTensors call = conformer_call(desc, {}, 2);
    std::vector<float> shifted_q(q.size()), u(a.size());
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t e = 0; e < T * d; ++e) {
        shifted_q[size_t(h * T * d + e)] = q[size_t(h * T * d + e)] + a[size_t(h * d + e % d)];
      }
    }
    for (size_t e = 0; e < u.size(); ++e) u[e] = b[e] - a[e];
    call.set(Tensor::q, shifted_q);
    call.set(Tensor::table, P);
    call.set(Tensor::relative_query_bias, u);
    const std::vector<float> got = run(context(), call, false);
    std::vector<double> want;
    for (int64_t h = 0; h < H; ++h) {
      const std::vector<double> head = conformer_head(
          q.data() + h * T * d, call.get(Tensor::k) + h * T * d, call.get(Tensor::v) + h * T * d,
          P.data() + h * (2 * T - 1) * d, a.data() + h * d, b.data() + h * d, T, d);
      want.insert(want.end(), head.begin(), head.end());
    }
    // (q + a and b - a rounded to fp32: a few ulps of the logits.)
    EXPECT_TRUE(close_to_reference(got, want, call, 1e-5, 1e-4));
  }
}

// Conformer shapes against the reference: prime and tail lengths, head
// sizes 1, 17 and 64, a padded batch (kv_lengths and q_lengths), fp32 and
// bf16, and the same bits at 1, 2 and 3 threads.
TEST_P(AttentionQueryBias, ConformerShapesMatchReference) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    for (const auto& [T, d] : {std::pair<int64_t, int64_t>{1, 17}, {31, 1}, {65, 64},
                               {200, 17}}) {
      posenc_attention_desc desc = conformer_desc(3, 2, T, T, d);
      desc.dtype = desc.out_dtype = dtype;
      const Sequences padded{{T, (T + 1) / 2, 1}, {T, T / 3 + 1, 1}, {}};
      SCOPED_TRACE(describe(desc));
      const AttentionTensors call = conformer_call(desc, padded, uint32_t(T * 7 + d));
      EXPECT_TRUE(close_to_reference(run(context(), call, true),
                                     reference::attention(desc, call.reference()), call, 1e-5,
                                     1e-4));
      EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
    }
  }
}

// One table for all heads (fp32) or one per head (bf16), clipped tables
// (Shaw's K), the logits of the unscaled q, with relative values (their
// table filled as the bias's);
// causal decode steps with an offset (query heads stacked on grouped kv
// heads), BTHD; a streaming chunk (16 frames after 128 cached, not causal);
// keys in several blocks.
TEST_P(AttentionQueryBias, TableKindsAndDecode) {
  for (int64_t clip : {0, 3, 40}) {
    for (int per_head : {0, 1}) {
      posenc_attention_desc d = conformer_desc(2, 4, 50, 50, 24);
      d.dtype = d.out_dtype = per_head ? POSENC_BF16 : POSENC_F32;
      d.max_distance = clip;
      d.tables_per_head = per_head;
      d.causal = 1;
      d.bias_uses_scaled_q = int(clip != 3);
      d.relative_values = int(clip == 40);
      SCOPED_TRACE(describe(d));
      AttentionTensors call = conformer_call(d, {}, uint32_t(clip * 3 + per_head));
      if (d.relative_values) call.view(Tensor::value_table, Tensor::table, 0);
      EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                     reference::attention(d, call.reference()), call, 1e-5, 1e-4));
    }
  }
  posenc_attention_desc chunk = conformer_desc(2, 4, 16, 144, 32);
  chunk.query_offset = 128;
  const AttentionTensors chunk_call = conformer_call(chunk, {}, 30);
  EXPECT_TRUE(close_to_reference(run(context(), chunk_call, false),
                                 reference::attention(chunk, chunk_call.reference()), chunk_call,
                                 1e-5, 1e-4));
  posenc_attention_desc long_keys = conformer_desc(1, 2, 64, 3000, 32);
  long_keys.dtype = long_keys.out_dtype = POSENC_BF16;
  const AttentionTensors long_call = conformer_call(long_keys, {}, 31);
  EXPECT_TRUE(close_to_reference(run(context(), long_call, false),
                                 reference::attention(long_keys, long_call.reference()), long_call,
                                 1e-5, 1e-4));
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc d = conformer_desc(2, 8, 3, 700, 16);
    d.kv_heads = 2;
    d.causal = 1;
    d.query_offset = 697;
    d.layout = POSENC_LAYOUT_BTHD;
    d.dtype = d.out_dtype = dtype;
    SCOPED_TRACE(describe(d));
    const AttentionTensors call = conformer_call(d, {}, 40);
    EXPECT_TRUE(close_to_reference(run(context(), call, false),
                                   reference::attention(d, call.reference()), call, 1e-5, 1e-4));
    EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
  }
}

// u = 0 adds exact zeros: the bits of the call without the option.
TEST_P(AttentionQueryBias, ZeroBiasKeepsTheBits) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    posenc_attention_desc d = conformer_desc(2, 3, 90, 90, 32);
    d.dtype = d.out_dtype = dtype;
    AttentionTensors with = conformer_call(d, {}, 9);
    with.set(Tensor::relative_query_bias, std::vector<float>(size_t(3 * 32), 0.0f));
    d.relative_query_bias = 0;
    AttentionTensors without = conformer_call(d, {}, 9);
    const std::vector<float> a = run(context(), with, false);
    const std::vector<float> b = run(context(), without, false);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionQueryBias);

}  // namespace
}  // namespace posenc::test
