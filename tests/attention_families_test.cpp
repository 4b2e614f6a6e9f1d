// The bias kinds of posenc_attention that need no q (TABLE_2D, TABLE_1D, T5,
// ALIBI: posenc/bias.h's, fused) on every ISA path, fp32 and bf16, against
// the double reference loops (which add posenc/bias.h's reference dense
// bias): windows with tails, BEiT's class token, T5 in both directions past
// max_distance, ALiBi's standard and given slopes, decode offsets; combined
// with per-sequence lengths and offsets, masks (Swin's shifted windows),
// GQA, layouts, causal and the split decode; bitwise at 1, 2 and 3
// threads; and the errors of bad fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/position_bias.hpp"
#include "ops/attention/problem.hpp"
#include "ops/bias/attention_bias_desc.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"
#include "reference/bias.hpp"

namespace posenc::test {
namespace {

constexpr double kF32Atol = 2e-5, kF32Rtol = 2e-4;

// The floats of the kind's table (0: ALiBi without slopes).
size_t table_floats(const posenc_attention_desc& d, bool alibi_slopes) {
  switch (d.bias) {
    case POSENC_BIAS_TABLE_2D:
      return size_t(((2 * d.map_height - 1) * (2 * d.map_width - 1) + 3 * d.class_token) *
                    d.heads);
    case POSENC_BIAS_TABLE_1D:
      return size_t(d.heads * (2 * d.max_distance + 1));
    case POSENC_BIAS_T5:
      return size_t(d.num_buckets * d.heads);
    default:
      return alibi_slopes ? size_t(d.heads) : 0;
  }
}

// One call: inputs rounded to bf16 for bf16 descs.
AttentionTensors call_of(const posenc_attention_desc& d, Sequences s = {},
                         bool alibi_slopes = false, std::vector<float> mask = {}) {
  AttentionTensors x(d, std::move(s));
  const int64_t kv_heads = d.kv_heads == 0 ? d.heads : d.kv_heads;
  const auto extent = [&](const posenc_token_strides& st, int64_t heads, int64_t tokens) {
    return size_t(reference::extent_of(d, st, heads, tokens));
  };
  x.fill(Tensor::q, extent(d.q_strides, d.heads, d.q_len), 1);
  x.fill(Tensor::k, extent(d.k_strides, kv_heads, d.kv_len), 2);
  x.fill(Tensor::v, extent(d.v_strides, kv_heads, d.kv_len), 3);
  // Slopes in (0, 1], tables in [-2, 2): biases the size of the scores.
  const bool slopes = d.bias == POSENC_BIAS_ALIBI;
  x.fill(Tensor::table, table_floats(d, alibi_slopes), 4, slopes ? 0.01f : -2.0f,
         slopes ? 1.0f : 2.0f);
  x.set(Tensor::mask, std::move(mask));
  return x;
}

::testing::AssertionResult matches_reference(posenc_context* context,
                                             const AttentionTensors& call) {
  const posenc_attention_desc& d = call.desc();
  const std::string line = describe(call);
  SCOPED_TRACE(line);
  const std::vector<float> got = run(context, call, true);
  return close_to_reference(got, reference::attention(d, call.reference()), call, kF32Atol,
                            kF32Rtol)
         << " [" << line << "]";
}

posenc_attention_desc table_2d(int64_t batch, int64_t heads, int64_t wh, int64_t ww,
                               int class_token, int64_t head_dim) {
  const int64_t n = wh * ww + class_token;
  posenc_attention_desc d = attention_desc(batch, heads, n, n, head_dim);
  d.bias = POSENC_BIAS_TABLE_2D;
  d.map_height = wh;
  d.map_width = ww;
  d.class_token = class_token;
  return d;
}

posenc_attention_desc table_1d(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                               int64_t max_distance, int64_t head_dim) {
  posenc_attention_desc d = attention_desc(batch, heads, q_len, kv_len, head_dim);
  d.bias = POSENC_BIAS_TABLE_1D;
  d.max_distance = max_distance;
  return d;
}

posenc_attention_desc t5(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                         int64_t num_buckets, int64_t max_distance, int bidirectional,
                         int64_t head_dim) {
  posenc_attention_desc d = attention_desc(batch, heads, q_len, kv_len, head_dim);
  d.bias = POSENC_BIAS_T5;
  d.num_buckets = num_buckets;
  d.max_distance = max_distance;
  d.bidirectional = bidirectional;
  d.causal = bidirectional ? 0 : 1;
  return d;
}

posenc_attention_desc alibi(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                            int bidirectional, int64_t head_dim) {
  posenc_attention_desc d = attention_desc(batch, heads, q_len, kv_len, head_dim);
  d.bias = POSENC_BIAS_ALIBI;
  d.bidirectional = bidirectional;
  d.causal = bidirectional ? 0 : 1;
  return d;
}

// Swin's shifted-window mask, windows folded into the batch: window w of a
// (rows x cols) grid of wh x ww windows gets the attention mask of timm's
// SwinTransformerBlock (0 within a region, -100 across), regions from a
// shift of wh/2, ww/2. [rows * cols, 1, N, N].
std::vector<float> swin_mask(int64_t rows, int64_t cols, int64_t wh, int64_t ww) {
  const int64_t H = rows * wh, W = cols * ww, sh = wh / 2, sw = ww / 2, n = wh * ww;
  auto region = [](int64_t x, int64_t size, int64_t window, int64_t shift) {
    return x < size - window ? 0 : x < size - shift ? 1 : 2;
  };
  std::vector<float> mask(size_t(rows * cols * n * n));
  for (int64_t w = 0; w < rows * cols; ++w) {
    const int64_t y0 = w / cols * wh, x0 = w % cols * ww;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t ri = region(y0 + i / ww, H, wh, sh) * 3 + region(x0 + i % ww, W, ww, sw);
        const int64_t rj = region(y0 + j / ww, H, wh, sh) * 3 + region(x0 + j % ww, W, ww, sw);
        mask[size_t((w * n + i) * n + j)] = ri == rj ? 0.0f : -100.0f;
      }
    }
  }
  return mask;
}

constexpr posenc_dtype kDtypes[] = {POSENC_F32, POSENC_BF16};

class AttentionFamilies : public IsaTest {};

TEST_P(AttentionFamilies, Table2dWindows) {
  for (const posenc_dtype dtype : kDtypes) {
    // Non-square, Swin's 7x7, a single cell, BEiT's class token, tails of
    // the vector width (d 24, 33 tokens); two windows (the bias expanded
    // once, shared) and one (each row's runs written whole per block).
    for (const int64_t batch : {2, 1}) {
      for (const auto& [wh, ww, cls] : std::vector<std::tuple<int64_t, int64_t, int>>{
               {3, 5, 0}, {7, 7, 0}, {1, 1, 0}, {4, 8, 1}, {5, 3, 1}, {1, 1, 1}}) {
        posenc_attention_desc d = table_2d(batch, 3, wh, ww, cls, 24);
        d.dtype = dtype;
        d.scale = 0.3f;
        EXPECT_TRUE(matches_reference(context(), call_of(d)));
      }
    }
    // A large window (several key rows per vector; one 240-key block, its
    // rows staged): 12x20.
    posenc_attention_desc d = table_2d(1, 2, 12, 20, 0, 16);
    d.dtype = dtype;
    EXPECT_TRUE(matches_reference(context(), call_of(d)));
    // One window with a mask, which the row's bias joins in one pass.
    posenc_attention_desc masked = table_2d(1, 2, 7, 7, 1, 16);
    masked.dtype = dtype;
    masked.mask_batch = masked.mask_heads = 1;
    masked.mask_q_len = masked.q_len;
    std::vector<float> mask(size_t(masked.q_len * masked.kv_len));
    for (size_t e = 0; e < mask.size(); ++e) mask[e] = float(e * 7 % 11) - 5.0f;
    EXPECT_TRUE(matches_reference(context(), call_of(masked, {}, false, mask)));
  }
  // A window past 2048 tokens (45 x 47 and the class token): key blocks of
  // 1024, each row's runs added in place.
  EXPECT_TRUE(matches_reference(context(), call_of(table_2d(1, 1, 45, 47, 1, 8))));
  // Batches of windows too large to expand (heads x N x N past 2^20
  // floats; N past 1024), their rows staged: 24x24 with a mask per
  // window, 33x33.
  posenc_attention_desc large = table_2d(2, 4, 24, 24, 0, 8);
  large.mask_batch = 2;
  large.mask_heads = 1;
  large.mask_q_len = large.q_len;
  std::vector<float> mask(size_t(2 * large.q_len * large.kv_len));
  for (size_t e = 0; e < mask.size(); ++e) mask[e] = float(e * 5 % 13) - 6.0f;
  EXPECT_TRUE(matches_reference(context(), call_of(large, {}, false, mask)));
  EXPECT_TRUE(matches_reference(context(), call_of(table_2d(2, 1, 33, 33, 0, 8))));
}

TEST_P(AttentionFamilies, SwinShiftedWindows) {
  for (const posenc_dtype dtype : kDtypes) {
    // A 2x3 grid of 7x7 windows, the batch = 2 images x 6 windows, BTHD.
    posenc_attention_desc d = table_2d(12, 4, 7, 7, 0, 32);
    d.dtype = dtype;
    d.layout = POSENC_LAYOUT_BTHD;
    d.mask_batch = 6;
    d.mask_heads = 1;
    d.mask_q_len = d.q_len;
    EXPECT_TRUE(matches_reference(context(), call_of(d, {}, false, swin_mask(2, 3, 7, 7))));
  }
}

// Gemma 2's soft cap comes before the bias (a cap of 0.5 bends these scores
// and tables in [-2, 2) far more than their sum): each kind, causal with a
// sliding window where it has a direction.
TEST_P(AttentionFamilies, SoftcapBeforeTheBias) {
  for (const posenc_dtype dtype : kDtypes) {
    posenc_attention_desc windowed_1d = table_1d(1, 3, 40, 40, 6, 16);
    windowed_1d.causal = 1;
    windowed_1d.sliding_window = 9;
    for (posenc_attention_desc d : {table_2d(2, 3, 4, 5, 1, 16), windowed_1d,
                                    t5(1, 3, 40, 40, 8, 20, 1, 16),
                                    alibi(1, 4, 40, 40, 0, 16)}) {
      d.dtype = dtype;
      d.softcap = 0.5f;
      EXPECT_TRUE(matches_reference(context(), call_of(d)));
    }
  }
}

TEST_P(AttentionFamilies, Table1d) {
  for (const posenc_dtype dtype : kDtypes) {
    for (const int64_t K : {0, 3, 40}) {
      posenc_attention_desc d = table_1d(2, 3, 37, 45, K, 24);
      d.dtype = dtype;
      EXPECT_TRUE(matches_reference(context(), call_of(d)));
    }
    // K past q_len + kv_len with far offsets: distances beyond the
    // prepared line read the stored table, within K (-74..-41, 56..89) and
    // across each edge, where the clipping takes the edge row (-114..-81
    // crosses -K, 86..119 crosses K).
    posenc_attention_desc d = table_1d(1, 2, 5, 30, 100, 16);
    d.dtype = dtype;
    for (const int64_t offset : {70, -60, 110, -90}) {
      d.query_offset = offset;
      EXPECT_TRUE(matches_reference(context(), call_of(d)));
    }
  }
}

TEST_P(AttentionFamilies, T5BothDirections) {
  for (const posenc_dtype dtype : kDtypes) {
    // Encoder (bidirectional) and decoder (unidirectional, causal), T5's
    // defaults and small max_distance so that distances pass it.
    for (const int bidirectional : {1, 0}) {
      for (const auto& [buckets, max_distance] :
           std::vector<std::pair<int64_t, int64_t>>{{32, 128}, {8, 10}, {32, 20}}) {
        posenc_attention_desc d = t5(2, 3, 70, 70, buckets, max_distance, bidirectional, 24);
        d.dtype = dtype;
        EXPECT_TRUE(matches_reference(context(), call_of(d)));
      }
    }
    // A decode chunk far into the cache (distances past max_distance), and
    // max_distance past q_len + kv_len with a far offset (buckets computed
    // per element beyond the line).
    posenc_attention_desc d = t5(1, 2, 7, 300, 32, 20, 0, 16);
    d.dtype = dtype;
    d.query_offset = 293;
    EXPECT_TRUE(matches_reference(context(), call_of(d)));
    d = t5(1, 2, 7, 40, 32, 1000, 1, 16);
    d.dtype = dtype;
    d.query_offset = 500;
    EXPECT_TRUE(matches_reference(context(), call_of(d)));
  }
}

TEST_P(AttentionFamilies, Alibi) {
  for (const posenc_dtype dtype : kDtypes) {
    for (const int64_t heads : {6, 8, 12}) {
      for (const int bidirectional : {0, 1}) {
        for (const bool given : {false, true}) {
          posenc_attention_desc d = alibi(1, heads, 33, 33, bidirectional, 16);
          d.dtype = dtype;
          EXPECT_TRUE(matches_reference(context(), call_of(d, {}, given)));
        }
      }
    }
    // Decode: 3 new tokens after 97 cached, NULL slopes.
    posenc_attention_desc d = alibi(2, 6, 3, 100, 0, 16);
    d.dtype = dtype;
    d.query_offset = 97;
    EXPECT_TRUE(matches_reference(context(), call_of(d)));
  }
}

// Per-sequence lengths and offsets (the distances follow each sequence's
// offset), a mask, GQA, BTHD and STRIDED (a KV cache of larger capacity).
TEST_P(AttentionFamilies, WithSequencesMaskGqaLayouts) {
  const Sequences seq{{60, 23, 0}, {40, 17, 3}, {20, 5, -7}};
  for (const posenc_dtype dtype : kDtypes) {
    for (const posenc_attention_bias bias :
         {POSENC_BIAS_TABLE_1D, POSENC_BIAS_T5, POSENC_BIAS_ALIBI}) {
      for (const posenc_attention_layout layout :
           {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD, POSENC_LAYOUT_STRIDED}) {
        posenc_attention_desc d =
            bias == POSENC_BIAS_TABLE_1D ? table_1d(3, 4, 40, 60, 9, 16)
            : bias == POSENC_BIAS_T5     ? t5(3, 4, 40, 60, 16, 24, 0, 16)
                                         : alibi(3, 4, 40, 60, 0, 16);
        d.dtype = dtype;
        d.kv_heads = 2;
        d.causal = 1;
        d.layout = layout;
        if (layout == POSENC_LAYOUT_STRIDED) {
          d.q_strides = d.out_strides = dense_strides(POSENC_LAYOUT_BHTD, 4, 40, 16);
          d.k_strides = d.v_strides = kv_cache_strides(2, 75, 16);
        }
        // A key-padding mask row per sequence.
        d.mask_batch = 3;
        d.mask_heads = 1;
        d.mask_q_len = 1;
        std::vector<float> mask = random_floats(size_t(3 * 60), 9, -2.0f, 2.0f);
        EXPECT_TRUE(
            matches_reference(context(), call_of(d, seq, bias == POSENC_BIAS_ALIBI, mask)));
      }
    }
  }
}

// A decode step whose keys are split across tasks, then merged; then one of
// 16 query heads on 2 kv heads whose tasks stack 4 query heads (plan.cpp).
TEST_P(AttentionFamilies, SplitDecode) {
  const Sequences seq{{4500, 3001}, {4, 2}, {4496, 2999}};
  for (const posenc_dtype dtype : kDtypes) {
    for (const posenc_attention_bias bias :
         {POSENC_BIAS_TABLE_1D, POSENC_BIAS_T5, POSENC_BIAS_ALIBI}) {
      posenc_attention_desc d = bias == POSENC_BIAS_TABLE_1D ? table_1d(2, 2, 4, 4500, 50, 16)
                                : bias == POSENC_BIAS_T5     ? t5(2, 2, 4, 4500, 32, 128, 0, 16)
                                                             : alibi(2, 2, 4, 4500, 0, 16);
      d.dtype = dtype;
      d.causal = 1;
      EXPECT_TRUE(matches_reference(context(), call_of(d, seq)));
      posenc_attention_desc grouped = bias == POSENC_BIAS_TABLE_1D
                                          ? table_1d(1, 16, 1, 8192, 50, 16)
                                      : bias == POSENC_BIAS_T5 ? t5(1, 16, 1, 8192, 32, 128, 0, 16)
                                                               : alibi(1, 16, 1, 8192, 0, 16);
      grouped.dtype = dtype;
      grouped.causal = 1;
      grouped.query_offset = 8191;
      grouped.kv_heads = 2;
      EXPECT_TRUE(matches_reference(context(), call_of(grouped)));
    }
  }
}

// The same bits on 1, 2 and 3 threads, every kind.
TEST_P(AttentionFamilies, ThreadCountIndependent) {
  std::vector<posenc_attention_desc> descs = {table_2d(3, 2, 7, 9, 1, 16),
                                              table_1d(2, 3, 70, 2300, 30, 16),
                                              t5(2, 3, 70, 2300, 32, 128, 1, 16),
                                              alibi(2, 3, 70, 2300, 0, 16)};
  descs[3].query_offset = 2230;
  for (const posenc_attention_desc& d : descs) {
    const AttentionTensors call = call_of(d);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      const Context context(Isa(GetParam()), threads);
      const std::vector<float> got = run(context.get(), call, true);
      if (first.empty()) {
        first = got;
        EXPECT_TRUE(all_close(got.data(), reference::attention(d, call.reference()), kF32Atol,
                              kF32Rtol))
            << describe(d);
      } else {
        ASSERT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
            << threads << " threads " << describe(d);
      }
    }
  }
}

// The fused attention's rows of those kinds as ops/attention/
// position_bias.cpp lays them out and adds them: the whole row's bias
// against posenc/bias.h's reference (in the scores' unit, mask_alpha), per
// block of 7 keys the values the whole row gets (bit for bit) and the
// block's maximum; window_row's run the values add_row adds. The lines past the prepared
// distances (K past q_len + kv_len, far offsets: their ends added one by
// one), a lone window with the class token, ALiBi's standard slopes. Rows
// of the 1D kinds gated (bias_gate's factor: 0.25 to 1.25, or -0.5).
TEST_P(AttentionFamilies, PositionBiasRowsAddTheirBiasAndReturnTheMaximum) {
  // 5 queries at the offset against 30 keys.
  std::vector<posenc_attention_desc> descs;
  for (const int64_t offset : {70, -60, 0}) {
    for (posenc_attention_desc d : {table_1d(1, 2, 5, 30, 100, 8), t5(1, 2, 5, 30, 32, 200, 1, 8),
                                    alibi(1, 2, 5, 30, 0, 8)}) {
      d.query_offset = offset;
      descs.push_back(d);
    }
  }
  descs.push_back(table_2d(1, 2, 3, 5, 1, 8));
  uint32_t seed = 80;
  for (const posenc_attention_desc& d : descs) {
    SCOPED_TRACE(testing::Message() << "bias " << d.bias << " offset " << d.query_offset);
    const ops::AttentionProblem p = ops::make_attention_problem(d);
    const std::vector<float> table = random_floats(table_floats(d, false), ++seed, -2.0f, 2.0f);
    const void* t = d.bias == POSENC_BIAS_ALIBI ? nullptr : table.data();
    std::vector<float> prepared(size_t(ops::PositionBias::prepared_floats(p)));
    ops::PositionBias::prepare(p, t, kernels(), prepared.data());
    const ops::PositionBias bias(p, t, kernels(), prepared.data());
    const std::vector<double> want = reference::position_bias(
        ops::position_bias_desc_of(d, d.query_offset), static_cast<const float*>(t));
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t i = 0; i < d.q_len; ++i) {
        const int64_t position = d.query_offset + i;
        const std::vector<float> scores = random_floats(size_t(d.kv_len), ++seed, -3.0f, 3.0f);
        std::vector<float> whole = scores, blocks = scores;
        const float gate = d.bias == POSENC_BIAS_TABLE_2D ? 1.0f
                           : (h + i) % 6 == 5             ? -0.5f
                                                          : 0.25f * float(1 + (h + i) % 6);
        const float whole_max = bias.add_row(h, i, position, 0, d.kv_len, gate, whole.data());
        ASSERT_EQ(whole_max, *std::max_element(whole.begin(), whole.end()));
        for (int64_t j = 0; j < d.kv_len; ++j) {
          const double added =
              gate * p.mask_alpha * want[size_t((h * d.q_len + i) * d.kv_len + j)];
          ASSERT_NEAR(whole[size_t(j)], scores[size_t(j)] + added,
                      1e-6 * (1.0 + std::abs(scores[size_t(j)]) + std::abs(added)))
              << "head " << h << " query " << i << " key " << j;
        }
        for (int64_t first = 0; first < d.kv_len; first += 7) {
          const int64_t count = std::min<int64_t>(7, d.kv_len - first);
          float* block = blocks.data() + first;
          const float block_max = bias.add_row(h, i, position, first, count, gate, block);
          ASSERT_EQ(block_max, *std::max_element(block, block + count)) << "first key " << first;
        }
        ASSERT_EQ(blocks, whole) << "head " << h << " query " << i;
        if (d.bias == POSENC_BIAS_TABLE_2D) {
          std::vector<float> added(size_t(d.kv_len), 0.0f), stage(ops::PositionBias::kStageFloats);
          bias.add_row(h, i, position, 0, d.kv_len, 1.0f, added.data());
          const float* run = bias.window_row(h, i, 0, d.kv_len, stage.data());
          ASSERT_NE(run, nullptr);
          ASSERT_EQ(std::vector<float>(run, run + d.kv_len), added) << "query " << i;
          ASSERT_EQ(bias.window_row(h, i, 7, d.kv_len - 7, stage.data()), nullptr);
        }
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionFamilies);

// The workspace of these kinds does not grow with q_len x kv_len, nor with
// a large max_distance.
TEST(AttentionFamiliesWorkspace, Bounded) {
  const Context context(Isa::automatic, 2);
  const posenc_attention_desc plain = attention_desc(1, 8, 1, 4096, 64);
  const size_t base = attention_workspace_size(context, plain);
  posenc_attention_desc d = t5(1, 8, 1, 4096, 32, int64_t(1) << 40, 0, 64);
  EXPECT_LE(attention_workspace_size(context, d), base + 8 * (2 * 4097 + 1) * 4 + 64);
  d = table_1d(1, 8, 1, 4096, int64_t(1) << 40, 64);
  EXPECT_LE(attention_workspace_size(context, d), base + 8 * (2 * 4097 + 1) * 4 + 64);
}

// Bad fields and tensors: the error names the field, nothing written.
class AttentionFamiliesErrors : public ::testing::Test {
 protected:
  static constexpr int64_t kHeads = 2, kD = 4;
  AttentionFamiliesErrors() : x_(random_floats(4096, 1)), table_(1024), out_(2 * 64 * kD) {}

  // desc `d` with tensors for it; checks the call fails with `want` naming
  // `argument` and writes nothing.
  ::testing::AssertionResult rejects(const posenc_attention_desc& d, posenc_status want,
                                     const char* argument, const void* table) {
    posenc_attention_tensors t{};
    t.q = t.k = t.v = x_.data();
    t.table = table;
    t.out = out_.data();
    t.query_offsets = query_offsets_;
    ::testing::AssertionResult result =
        fails_with(posenc_attention(nullptr, &d, &t, nullptr, 0), want, argument);
    if (result && !out_.payload_untouched()) {
      result = ::testing::AssertionFailure() << "out written";
    }
    query_offsets_ = nullptr;
    return result;
  }
  posenc_status call(const posenc_attention_desc& d, const void* table) {
    posenc_attention_tensors t{};
    t.q = t.k = t.v = x_.data();
    t.table = table;
    t.out = out_.data();
    return posenc_attention(nullptr, &d, &t, nullptr, 0);
  }

  std::vector<float> x_, table_;
  GuardedFloats out_;
  const void* query_offsets_ = nullptr;
};

TEST_F(AttentionFamiliesErrors, ValidCallsWork) {
  EXPECT_EQ(call(table_2d(1, kHeads, 3, 5, 0, kD), table_.data()), POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(call(table_2d(1, kHeads, 3, 5, 1, kD), table_.data()), POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(call(table_1d(1, kHeads, 8, 9, 0, kD), table_.data()), POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(call(t5(1, kHeads, 8, 9, 32, 128, 1, kD), table_.data()), POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(call(alibi(1, kHeads, 8, 9, 0, kD), nullptr), POSENC_OK) << posenc_last_error();
  EXPECT_EQ(call(alibi(1, kHeads, 8, 9, 1, kD), table_.data()), POSENC_OK) << posenc_last_error();
}

// Each row: a valid desc, one field changed, the error naming that field.
TEST_F(AttentionFamiliesErrors, Fields) {
  struct Row {
    posenc_attention_desc desc;
    void (*edit)(posenc_attention_desc&);
    posenc_status want;
    const char* field;
  };
  constexpr auto bad = POSENC_ERROR_INVALID_ARGUMENT;
  const posenc_attention_desc map = table_2d(1, kHeads, 3, 5, 0, kD);
  const posenc_attention_desc line = table_1d(1, kHeads, 8, 9, 3, kD);
  const posenc_attention_desc plain = attention_desc(1, kHeads, 8, 9, kD);
  const Row rows[] = {
      {map, [](auto& d) { d.map_width = 0; }, bad, "desc->map_width"},
      // 4x5 = 20 tokens, not 15
      {map, [](auto& d) { d.map_height = 4; }, POSENC_ERROR_SHAPE_MISMATCH, "desc->q_len"},
      {map, [](auto& d) { d.class_token = 2; }, bad, "desc->class_token"},
      {map, [](auto& d) { d.query_offset = 1; }, bad, "desc->query_offset"},
      {map, [](auto& d) { d.tables_per_head = 1; }, bad, "desc->tables_per_head"},
      {map, [](auto& d) { d.num_buckets = 32; }, bad, "desc->num_buckets"},
      {line, [](auto& d) { d.bidirectional = 1; }, bad, "desc->bidirectional"},
      {line, [](auto& d) { d.map_height = 2; }, bad, "desc->map_height"},
      {line, [](auto& d) { d.relative_values = 1; }, bad, "desc->relative_values"},
      {t5(1, kHeads, 8, 9, 3, 128, 1, kD), [](auto&) {}, bad, "desc->num_buckets"},
      // max_exact 8
      {t5(1, kHeads, 8, 9, 32, 8, 1, kD), [](auto&) {}, bad, "desc->max_distance"},
      {t5(1, kHeads, 8, 9, 32, 128, 2, kD), [](auto&) {}, bad, "desc->bidirectional"},
      {alibi(1, kHeads, 8, 9, 0, kD), [](auto& d) { d.max_distance = 4; }, bad,
       "desc->max_distance"},
      // The kinds' fields with the other kinds.
      {plain, [](auto& d) { d.class_token = 1; }, bad, "desc->class_token"},
      {plain, [](auto& d) { d.bidirectional = 1; }, bad, "desc->bidirectional"},
      {plain, [](auto& d) { store_enum(d.bias, 9); }, bad, "desc->bias"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.field) + " of row " + std::to_string(&row - rows));
    posenc_attention_desc d = row.desc;
    row.edit(d);
    const void* table = row.desc.bias == POSENC_BIAS_NONE ? nullptr : table_.data();
    EXPECT_TRUE(rejects(d, row.want, row.field, table));
  }
  // Per-sequence query offsets with TABLE_2D (a window has no offset).
  const int32_t offsets[1] = {0};
  query_offsets_ = offsets;
  EXPECT_TRUE(rejects(map, bad, "tensors->query_offsets", table_.data()));
}

TEST_F(AttentionFamiliesErrors, Table) {
  EXPECT_TRUE(rejects(table_2d(1, kHeads, 3, 5, 0, kD), POSENC_ERROR_NULL_POINTER,
                      "tensors->table", nullptr));
  EXPECT_TRUE(rejects(t5(1, kHeads, 8, 9, 32, 128, 1, kD), POSENC_ERROR_NULL_POINTER,
                      "tensors->table", nullptr));
  EXPECT_TRUE(rejects(table_1d(1, kHeads, 8, 9, 3, kD), POSENC_ERROR_INVALID_ARGUMENT,
                      "tensors->table", offset_bytes(table_.data(), 2)));
  // out over the table (TABLE_2D 3x5: 35 rows x 2 heads).
  EXPECT_TRUE(rejects(table_2d(1, kHeads, 3, 5, 0, kD), POSENC_ERROR_ALIASING, "tensors->table",
                      out_.data() + 10));
}

}  // namespace
}  // namespace posenc::test
