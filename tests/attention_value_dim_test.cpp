// posenc_attention with a value head size other than head_dim (timm's
// qk_ratio != 1): v, out and the relative values' table of value_head_dim
// columns, q, k and the bias tables of head_dim. Sizes smaller and larger
// than head_dim, odd ones and 1, with every option (layouts and strides, GQA,
// per-sequence lengths and offsets, masks, causal, each bias kind, relative
// values, online softmax over long keys, split-key decode), on every ISA
// path, fp32 and bf16, against the double reference; the same bits at 1, 2
// and 3 threads; the errors that name the field.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

// (head_dim, value_head_dim)
constexpr int64_t kSizes[][2] = {{64, 48}, {48, 64}, {16, 1}, {8, 17}, {32, 130}, {17, 9}};

// The tensors of one desc (values rounded to bf16 for bf16 calls, so that
// the reference sees what posenc sees; the mask stays fp32).
AttentionTensors call_of(const posenc_attention_desc& d, Sequences s = {}) {
  AttentionTensors x(d, std::move(s));
  const auto add = [&](Tensor t, int64_t count, uint32_t salt) {
    x.fill(t, size_t(count), salt * 7919u + uint32_t(count));
  };
  const int64_t kv_heads = reference::kv_heads_of(d), dv = reference::value_head_dim_of(d);
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  const int64_t rows_1d = relative_rows(d, x.sequences().query_offsets);
  add(Tensor::q, reference::extent_of(d, d.q_strides, d.heads, d.q_len), 1);
  add(Tensor::k, reference::extent_of(d, d.k_strides, kv_heads, d.kv_len), 2);
  add(Tensor::v, reference::extent_of(d, d.v_strides, kv_heads, d.kv_len, dv), 3);
  if (d.bias == POSENC_BIAS_ABSOLUTE) add(Tensor::table, heads * d.kv_len * d.head_dim, 4);
  if (d.bias == POSENC_BIAS_RELATIVE_1D) add(Tensor::table, heads * rows_1d * d.head_dim, 4);
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    add(Tensor::table_h, heads * (2 * d.map_height - 1) * d.head_dim, 5);
    add(Tensor::table_w, heads * (2 * d.map_width - 1) * d.head_dim, 6);
  }
  if (d.relative_values) add(Tensor::value_table, heads * rows_1d * dv, 7);
  if (d.mask_batch > 0) {
    const int64_t count = d.mask_batch * d.mask_heads * d.mask_q_len * d.kv_len;
    x.set(Tensor::mask, mask_values(size_t(count), 8 * 7919u + uint32_t(count)));
  }
  return x;
}

::testing::AssertionResult matches(posenc_context* context, const AttentionTensors& call) {
  const std::vector<float> got = run(context, call, true);
  return close_to_reference(got, reference::attention(call.desc(), call.reference()), call, 1e-5,
                            1e-4);
}

// The options of posenc/attention.h, a few at a time.
enum class Options {
  plain,             // BHTD, no bias
  absolute_causal,   // BTHD, ABSOLUTE per-head table, causal from offset 8
  clipped_values,    // RELATIVE_1D K = 5 with relative values, GQA (4 heads, 2 kv heads)
  sequences_masked,  // unclipped 1D with values, causal, per-sequence tensors, a padding mask
  map_2d,            // RELATIVE_2D 5x7, logits from the unscaled q, a full mask
  strided,           // STRIDED with padded rows, multi-query, clipped values
  long_keys,         // 2100 keys: key blocks of 1024, the online softmax's rescaling
};
constexpr Options kOptions[] = {Options::plain,           Options::absolute_causal,
                                Options::clipped_values,  Options::sequences_masked,
                                Options::map_2d,          Options::strided,
                                Options::long_keys};

posenc_attention_desc desc_of(Options o, int64_t head_dim, int64_t value_head_dim,
                              posenc_dtype dtype, Sequences& s) {
  posenc_attention_desc d = attention_desc(2, 3, 37, 45, head_dim);
  d.value_head_dim = value_head_dim;
  d.dtype = dtype;
  s = {};
  switch (o) {
    case Options::plain:
      break;
    case Options::absolute_causal:
      d.layout = POSENC_LAYOUT_BTHD;
      d.bias = POSENC_BIAS_ABSOLUTE;
      d.tables_per_head = 1;
      d.causal = 1;
      d.query_offset = 8;
      d.out_dtype = dtype;
      break;
    case Options::clipped_values:
      d.heads = 4;
      d.kv_heads = 2;
      d.bias = POSENC_BIAS_RELATIVE_1D;
      d.max_distance = 5;
      d.relative_values = 1;
      d.tables_per_head = 1;
      break;
    case Options::sequences_masked:
      d.batch = 3;
      d.layout = POSENC_LAYOUT_BTHD;
      d.bias = POSENC_BIAS_RELATIVE_1D;
      d.relative_values = 1;
      d.causal = 1;
      d.index_type = POSENC_INDEX_INT64;
      s.kv_lengths = {45, 30, 1};
      s.q_lengths = {37, 20, 5};
      s.query_offsets = {8, 10, -3};
      d.mask_batch = 1;
      d.mask_heads = 1;
      d.mask_q_len = 1;
      d.mask_dtype = POSENC_F32;
      break;
    case Options::map_2d:
      d.q_len = d.kv_len = 35;
      d.bias = POSENC_BIAS_RELATIVE_2D;
      d.map_height = 5;
      d.map_width = 7;
      d.bias_uses_scaled_q = 0;
      d.mask_batch = d.batch;
      d.mask_heads = d.heads;
      d.mask_q_len = d.q_len;
      d.mask_dtype = POSENC_F32;
      break;
    case Options::strided: {
      d.kv_heads = 1;
      d.layout = POSENC_LAYOUT_STRIDED;
      const int64_t q_row = head_dim + 3, k_row = head_dim + 5;
      const int64_t v_row = value_head_dim + 7, out_row = value_head_dim + 2;
      d.q_strides = {d.heads * d.q_len * q_row, d.q_len * q_row, q_row};  // BHTD, padded
      d.k_strides = {d.kv_len * k_row, d.kv_len * k_row, k_row};
      d.v_strides = {d.kv_len * v_row, v_row, v_row};                      // BTHD, padded
      d.out_strides = {d.q_len * d.heads * out_row, out_row, d.heads * out_row};
      d.bias = POSENC_BIAS_RELATIVE_1D;
      d.max_distance = 9;
      d.relative_values = 1;
      break;
    }
    case Options::long_keys:
      d.batch = d.heads = 1;
      d.q_len = 20;
      d.kv_len = 2100;
      d.bias = POSENC_BIAS_RELATIVE_1D;
      d.max_distance = 16;
      d.relative_values = 1;
      break;
  }
  return d;
}

// A decode step of 4 queries against 4097 keys: split into key ranges.
posenc_attention_desc decode_desc(int64_t head_dim, int64_t value_head_dim, posenc_dtype dtype) {
  posenc_attention_desc d = attention_desc(1, 2, 4, 4097, head_dim);
  d.value_head_dim = value_head_dim;
  d.dtype = dtype;
  d.layout = POSENC_LAYOUT_BTHD;
  d.causal = 1;
  d.query_offset = d.kv_len - d.q_len;
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.relative_values = 1;
  d.tables_per_head = 1;
  return d;
}

constexpr posenc_dtype kDtypes[] = {POSENC_F32, POSENC_BF16};

class AttentionValueDim : public IsaTest {};

TEST_P(AttentionValueDim, MatchesReference) {
  for (const auto& size : kSizes) {
    for (Options o : kOptions) {
      for (posenc_dtype dtype : kDtypes) {
        Sequences s;
        const posenc_attention_desc d = desc_of(o, size[0], size[1], dtype, s);
        SCOPED_TRACE(describe(d));
        EXPECT_TRUE(matches(context(), call_of(d, s)));
      }
    }
  }
}

// value_head_dim = head_dim is the same call as 0.
TEST_P(AttentionValueDim, EqualToHeadDimIsTheDefault) {
  Sequences s;
  posenc_attention_desc d = desc_of(Options::sequences_masked, 24, 24, POSENC_F32, s);
  const std::vector<float> given = run(context(), call_of(d, s), true);
  d.value_head_dim = 0;
  const std::vector<float> zero = run(context(), call_of(d, s), true);
  ASSERT_EQ(given.size(), zero.size());
  EXPECT_EQ(std::memcmp(given.data(), zero.data(), given.size() * sizeof(float)), 0);
}

TEST_P(AttentionValueDim, SplitKeyDecode) {
  for (const auto& size : kSizes) {
    for (posenc_dtype dtype : kDtypes) {
      const posenc_attention_desc d = decode_desc(size[0], size[1], dtype);
      SCOPED_TRACE(describe(d));
      const ops::AttentionPlan plan =
          ops::plan_attention(ops::make_attention_problem(d), 2, GetParam());
      ASSERT_GT(plan.blocking.key_splits, 1);
      EXPECT_TRUE(matches(context(), call_of(d)));
    }
  }
}

// Causal query blocks of 64 over 256 tokens, with values of 192 columns
// (three of oneDNN's column blocks): the GEMMs over fewer keys read each
// column block of the packed values (matmul_on_packed_b); BHTD and BTHD.
TEST_P(AttentionValueDim, CausalBlocksOfWideValues) {
  for (posenc_dtype dtype : kDtypes) {
    for (posenc_attention_layout layout : {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD}) {
      posenc_attention_desc d = attention_desc(1, 2, 256, 256, 64);
      d.value_head_dim = 192;
      d.dtype = dtype;
      d.layout = layout;
      d.causal = 1;
      SCOPED_TRACE(describe(d));
      EXPECT_TRUE(matches(context(), call_of(d)));
    }
  }
}

// The same bits at 1, 2 and 3 threads: the options' calls and a split decode.
TEST_P(AttentionValueDim, SameBitsAtAnyThreadCount) {
  for (posenc_dtype dtype : kDtypes) {
    std::vector<std::pair<posenc_attention_desc, Sequences>> calls;
    for (Options o : {Options::clipped_values, Options::sequences_masked, Options::strided,
                      Options::long_keys}) {
      Sequences s;
      const posenc_attention_desc d = desc_of(o, 16, 40, dtype, s);
      calls.emplace_back(d, s);
    }
    calls.emplace_back(decode_desc(40, 17, dtype), Sequences{});
    for (const auto& [desc, sequences] : calls) {
      SCOPED_TRACE(describe(desc));
      EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call_of(desc, sequences)));
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionValueDim);

// A call with a value head size that the checks refuse: the status, the
// field named, and out left untouched.
::testing::AssertionResult refused(const posenc_attention_desc& d, posenc_status want,
                                   const char* name, int64_t out_offset = 0) {
  std::vector<float> q(4096, 0.5f), k(4096, 0.5f), v(4096, 0.5f);
  GuardedFloats out(4096);
  const posenc_attention_tensors t{q.data(), k.data(), v.data(), nullptr, nullptr, nullptr,
                                   nullptr, out_offset < 0 ? v.data() + -out_offset : out.data(),
                                   nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                   nullptr};
  size_t bytes = 0;
  const bool desc_error = want != POSENC_ERROR_ALIASING || out_offset == 0;
  if (desc_error) {
    ::testing::AssertionResult sized =
        fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes), want, name);
    if (!sized) return sized << " (workspace_size)";
  }
  ::testing::AssertionResult run = fails_with(posenc_attention(nullptr, &d, &t, nullptr, 0),
                                              want, name);
  if (!run) return run;
  if (!out.payload_untouched() || !out.guards_intact()) {
    return ::testing::AssertionFailure() << "out was written";
  }
  return ::testing::AssertionSuccess();
}

TEST(AttentionValueDimErrors, NameTheField) {
  posenc_attention_desc d = attention_desc(1, 2, 4, 6, 8);
  d.value_head_dim = -1;
  EXPECT_TRUE(refused(d, POSENC_ERROR_INVALID_ARGUMENT, "desc->value_head_dim"));
  d.value_head_dim = int64_t(1) << 40;  // the workspace's accumulators would overflow
  EXPECT_TRUE(refused(d, POSENC_ERROR_OVERFLOW, "desc->value_head_dim"));
  // Under STRIDED v's token stride is at least value_head_dim (here more
  // than head_dim), and out's rows of value_head_dim must not overlap.
  d = attention_desc(1, 2, 4, 6, 8);
  d.value_head_dim = 12;
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.k_strides = {0, 6 * 8, 8};
  d.v_strides = {0, 6 * 12, 11};
  d.out_strides = {0, 4 * 12, 12};
  EXPECT_TRUE(refused(d, POSENC_ERROR_INVALID_ARGUMENT, "desc->v_strides.token"));
  EXPECT_NE(std::string(posenc_last_error()).find("desc->value_head_dim (12)"),
            std::string::npos)
      << posenc_last_error();
  d.v_strides = {0, 6 * 12, 12};
  EXPECT_TRUE(matches(nullptr, call_of(d)));
  d.out_strides = {0, 4 * 12, 10};  // rows of 12 elements, 10 apart
  EXPECT_TRUE(refused(d, POSENC_ERROR_ALIASING, "desc->out_strides"));
  // v spans 2 * 6 * 12 elements (BHTD): an out starting inside it, past
  // where a v of head_dim columns would end, overlaps it.
  d = attention_desc(1, 2, 4, 6, 8);
  d.value_head_dim = 12;
  EXPECT_TRUE(refused(d, POSENC_ERROR_ALIASING, "tensors->out", -2 * 6 * 8 - 4));
}

}  // namespace
}  // namespace posenc::test
