// Bad input to the attention C ABI: the documented status, a message naming
// the argument, and nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

// A valid 1D-relative call on small tensors, to break one argument at a time.
class AttentionErrors : public ::testing::Test {
 protected:
  static constexpr int64_t kT = 6, kD = 4, kCount = kT * kD;

  AttentionErrors()
      : q_(random_floats(kCount, 1)), k_(random_floats(kCount, 2)), v_(random_floats(kCount, 3)),
        table_(random_floats((2 * kT - 1) * kD, 4)), out_(kCount) {
    posenc_attention_desc_init(&d_, 1, 1, kT, kT, kD);
    d_.bias = POSENC_BIAS_RELATIVE_1D;
    t_ = posenc_attention_tensors{q_.data(), k_.data(), v_.data(), table_.data(),
                                  nullptr,   nullptr,   nullptr,   out_.data(),
                                  nullptr,   nullptr,   nullptr,   nullptr,
                                  nullptr, nullptr, nullptr, nullptr};
  }

  posenc_status call() { return posenc_attention(nullptr, &d_, &t_, nullptr, 0); }

  // The call fails as expected and leaves out untouched; then d_ and t_ are
  // restored for the next case.
  ::testing::AssertionResult rejects(posenc_status want, const char* argument) {
    ::testing::AssertionResult result = fails_with(call(), want, argument);
    if (result && !out_.payload_untouched()) {
      result = ::testing::AssertionFailure() << "out was written";
    }
    posenc_attention_desc_init(&d_, 1, 1, kT, kT, kD);
    d_.bias = POSENC_BIAS_RELATIVE_1D;
    t_ = posenc_attention_tensors{q_.data(), k_.data(), v_.data(), table_.data(),
                                  nullptr,   nullptr,   nullptr,   out_.data(),
                                  nullptr,   nullptr,   nullptr,   nullptr,
                                  nullptr, nullptr, nullptr, nullptr};
    return result;
  }

  std::vector<float> q_, k_, v_, table_;
  GuardedFloats out_;
  posenc_attention_desc d_;
  posenc_attention_tensors t_;
};

TEST_F(AttentionErrors, ValidCallWorks) {
  ASSERT_EQ(call(), POSENC_OK) << posenc_last_error();
  EXPECT_TRUE(out_.guards_intact());
}

TEST_F(AttentionErrors, NullPointers) {
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, nullptr, &t_, nullptr, 0),
                         POSENC_ERROR_NULL_POINTER, "desc"));
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, nullptr, nullptr, 0),
                         POSENC_ERROR_NULL_POINTER, "tensors"));
  t_.q = nullptr;
  EXPECT_TRUE(rejects(POSENC_ERROR_NULL_POINTER, "tensors->q"));
  t_.v = nullptr;
  EXPECT_TRUE(rejects(POSENC_ERROR_NULL_POINTER, "tensors->v"));
  t_.table = nullptr;
  EXPECT_TRUE(rejects(POSENC_ERROR_NULL_POINTER, "tensors->table"));
  d_.relative_values = 1;
  EXPECT_TRUE(rejects(POSENC_ERROR_NULL_POINTER, "tensors->value_table"));
  size_t bytes;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, nullptr),
                         POSENC_ERROR_NULL_POINTER, "bytes"));
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, nullptr, &bytes),
                         POSENC_ERROR_NULL_POINTER, "desc"));
}

TEST_F(AttentionErrors, SizesEnumsAndFlags) {
  d_.batch = -1;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->batch"));
  d_.kv_len = -3;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_len"));
  d_.head_dim = 0;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->head_dim"));
  d_.layout = posenc_attention_layout(5);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->layout"));
  d_.dtype = posenc_dtype(3);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->dtype"));
  d_.out_dtype = posenc_dtype(1 << 30);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->out_dtype"));
  d_.scale = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->scale"));
  d_.causal = 2;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->causal"));
  d_.tables_per_head = -1;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->tables_per_head"));
  d_.bias_uses_scaled_q = 3;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->bias_uses_scaled_q"));
  d_.bias = posenc_attention_bias(9);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->bias"));
  d_.query_offset = int64_t(1) << 50;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->query_offset"));
  d_.max_distance = -1;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->max_distance"));
  d_.q_len = INT64_MAX / 2;
  EXPECT_TRUE(rejects(POSENC_ERROR_OVERFLOW, "q_len"));
  d_.batch = int64_t(1) << 40;
  d_.heads = int64_t(1) << 40;
  EXPECT_TRUE(rejects(POSENC_ERROR_OVERFLOW, "tensors->q"));
  // Found by the fuzzer: heads * tokens * head_dim itself overflowing must be
  // refused before any stride is computed (UBSan checks the order).
  d_.heads = int64_t(1) << 62;
  size_t bytes = 0;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                         POSENC_ERROR_OVERFLOW, "desc->heads"));
  EXPECT_TRUE(rejects(POSENC_ERROR_OVERFLOW, "tensors->q"));
}

TEST_F(AttentionErrors, TablesMustMatchTheBias) {
  d_.bias = POSENC_BIAS_NONE;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->table"));
  t_.table_h = table_.data();
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->table_h"));
  t_.value_table = table_.data();
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->value_table"));
  // The 2D cases: a map of 2 x 3 tokens, then one thing wrong.
  auto map_2d = [&](int64_t height, int64_t width) {
    d_.bias = POSENC_BIAS_RELATIVE_2D;
    d_.map_height = height;
    d_.map_width = width;
    t_.table = nullptr;
    t_.table_h = t_.table_w = table_.data();
  };
  map_2d(2, 2);  // not the 6 tokens of q and k
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->map_height"));
  map_2d(2, int64_t(1) << 62);  // 2 x 2^62 overflows int64 (UBSan saw the product)
  d_.q_len = d_.kv_len = INT64_MAX;
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->map_height"));
  map_2d(0, 3);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->map_height"));
  map_2d(2, 3);
  d_.relative_values = 1;
  t_.value_table = table_.data();
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_values"));
  map_2d(2, 3);
  d_.kv_len = 5;
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->map_height"));
  map_2d(2, 3);
  EXPECT_EQ(call(), POSENC_OK) << posenc_last_error();
}

// map_height, map_width and max_distance are refused where the bias does
// not read them, not ignored; relative values read max_distance.
TEST_F(AttentionErrors, FieldsTheBiasDoesNotRead) {
  const auto without_table = [&](posenc_attention_bias bias) {
    d_.bias = bias;
    if (bias == POSENC_BIAS_NONE) t_.table = nullptr;
  };
  for (posenc_attention_bias bias : {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE}) {
    without_table(bias);
    d_.map_height = -3;
    d_.map_width = -7;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->map_height"));
    without_table(bias);
    d_.map_height = 2;
    d_.map_width = 3;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->map_height"));
    without_table(bias);
    d_.max_distance = 5;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->max_distance"));
    // The fields of the kinds without q name the kinds that read them.
    without_table(bias);
    d_.class_token = 1;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT,
                        "desc->class_token must be 0 unless bias is TABLE_2D (got 1)"));
    without_table(bias);
    d_.num_buckets = 32;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT,
                        "desc->num_buckets must be 0 unless bias is T5 or DISENTANGLED (got 32)"));
    without_table(bias);
    d_.bidirectional = 1;
    EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT,
                        "desc->bidirectional must be 0 unless bias is T5 or ALIBI (got 1)"));
  }
  d_.bias = POSENC_BIAS_RELATIVE_2D;
  d_.map_height = 2;
  d_.map_width = 3;
  t_.table = nullptr;
  t_.table_h = t_.table_w = table_.data();
  d_.max_distance = 1;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->max_distance"));
  without_table(POSENC_BIAS_NONE);
  d_.relative_values = 1;
  d_.max_distance = 2;
  t_.value_table = table_.data();
  EXPECT_EQ(call(), POSENC_OK) << posenc_last_error();
}

TEST_F(AttentionErrors, Aliasing) {
  t_.out = q_.data();
  EXPECT_TRUE(fails_with(call(), POSENC_ERROR_ALIASING, "tensors->out"));
  t_.out = const_cast<float*>(table_.data()) + 1;
  EXPECT_TRUE(fails_with(call(), POSENC_ERROR_ALIASING, "tensors->table"));
  t_.out = out_.data();
  std::vector<unsigned char> workspace(1 << 20);
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, out_.data(), 1 << 20),
                         POSENC_ERROR_ALIASING, "workspace"));
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, k_.data(), 1 << 20),
                         POSENC_ERROR_ALIASING, "workspace"));
  EXPECT_TRUE(out_.payload_untouched());
}

TEST_F(AttentionErrors, KvHeads) {
  size_t bytes = 12345;
  d_.kv_heads = -1;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_heads"));
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_heads"));
  d_.kv_heads = 2;  // not a divisor of heads = 1
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_heads"));
  d_.heads = 3;
  d_.kv_heads = 2;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_heads"));
  EXPECT_EQ(bytes, 12345u);
}

// STRIDED with the dense strides of the fixture's tensors; then one thing
// wrong at a time.
// Sizes the tensors' extents do not bound (a strided layout's zero strides
// repeat q's, k's and v's rows across heads) still bound the workspace: its
// size is refused, not wrapped (a wrapped size let a call write past it).
TEST_F(AttentionErrors, WorkspaceSizesThatWouldOverflowAreRefused) {
  size_t bytes = 12345;
  posenc_attention_desc d;
  // T5's prepared lines: heads x (2 min(max_distance, q_len + kv_len) + 1)
  // floats, 2^42 x (2^21 + 1) here, and 2^41 x (2^21 + 1) x 4 bytes.
  posenc_attention_desc_init(&d, 1, int64_t(1) << 42, 1, int64_t(1) << 20, 1);
  d.kv_heads = 1;
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.k_strides = d.v_strides = posenc_token_strides{0, 0, 1};
  d.out_strides = posenc_token_strides{0, 1, 1};
  d.dtype = d.out_dtype = POSENC_BF16;
  d.bias = POSENC_BIAS_T5;
  d.num_buckets = 2;
  d.max_distance = int64_t(1) << 20;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes),
                         POSENC_ERROR_OVERFLOW, "desc->heads x the bias's distances"));
  d.heads = int64_t(1) << 41;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes),
                         POSENC_ERROR_OVERFLOW, "desc: the workspace it needs"));
  EXPECT_EQ(bytes, 12345u);
  d.heads = int64_t(1) << 30;  // 2^30 x (2^21 + 1) floats: 8 PiB, but a size
  ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_OK) << posenc_last_error();
  EXPECT_GT(bytes, (size_t(1) << 51) * sizeof(float));
  // The head sizes: q's rows and the accumulators scale with them.
  for (int64_t head_dim : {int64_t(1) << 40, int64_t(1) << 56}) {
    posenc_attention_desc_init(&d, 1, 1, 5, 1, head_dim);
    bytes = 12345;
    EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes),
                           POSENC_ERROR_OVERFLOW, "desc->head_dim"));
    EXPECT_EQ(bytes, 12345u);
    d.head_dim = 4;
    d.value_head_dim = head_dim;
    EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes),
                           POSENC_ERROR_OVERFLOW, "desc->value_head_dim"));
  }
}

// A bias's sizes that overflow name the fields that make them.
TEST_F(AttentionErrors, BiasSizeOverflowsNameTheirFields) {
  size_t bytes = 12345;
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, 1, 1, 1, 4);
  d.bias = POSENC_BIAS_TABLE_2D;
  d.map_height = 7;  // 7 x 1317624576693539401 is INT64_MAX
  d.map_width = 1317624576693539401;
  d.class_token = 1;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes),
                         POSENC_ERROR_OVERFLOW,
                         "desc->map_height * map_width + desc->class_token"));
  posenc_attention_desc_init(&d, 1, int64_t(1) << 23, 1, 1, 4);
  d.bias = POSENC_BIAS_TABLE_1D;
  d.max_distance = int64_t(1) << 40;  // [heads, 2^41 + 1] floats
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d, &bytes),
                         POSENC_ERROR_OVERFLOW, "tensors->table"));
  EXPECT_EQ(bytes, 12345u);
}

TEST_F(AttentionErrors, Strides) {
  auto strided = [&] {
    d_.layout = POSENC_LAYOUT_STRIDED;
    d_.q_strides = d_.k_strides = d_.v_strides = d_.out_strides =
        posenc_token_strides{kCount, kCount, kD};
  };
  // Strides with a dense layout are a mistake, not ignored.
  d_.k_strides.token = kD;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->k_strides"));
  d_.out_strides.batch = 1;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->out_strides"));
  strided();
  d_.q_strides.head = -1;
  size_t bytes = 12345;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->q_strides.head"));
  EXPECT_EQ(bytes, 12345u);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->q_strides.head"));
  strided();
  d_.v_strides.token = kD - 1;  // a GEMM's row stride shorter than the row
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->v_strides.token"));
  strided();
  d_.k_strides.token = INT64_MAX / 4;  // the extent overflows
  EXPECT_TRUE(rejects(POSENC_ERROR_OVERFLOW, "desc->k_strides"));
  strided();
  d_.q_strides.token = INT64_MAX / 16;  // the extent fits, its bytes do not
  EXPECT_TRUE(rejects(POSENC_ERROR_OVERFLOW, "desc->q_strides"));
  // out's rows overlapping each other: a short token stride, a repeated row.
  strided();
  d_.out_strides.token = kD - 1;
  EXPECT_TRUE(rejects(POSENC_ERROR_ALIASING, "desc->out_strides"));
  strided();
  d_.out_strides.token = 0;
  EXPECT_TRUE(rejects(POSENC_ERROR_ALIASING, "desc->out_strides"));
  strided();
  d_.heads = 2;  // heads interleaved with tokens: row (h=1, t=0) is row (h=0, t=1)
  d_.out_strides = posenc_token_strides{0, kD, kD};
  d_.q_strides.head = d_.k_strides.head = d_.v_strides.head = 0;
  EXPECT_TRUE(rejects(POSENC_ERROR_ALIASING, "desc->out_strides"));
  // out in the gaps between q's rows: disjoint elements, but inside q's
  // extent, which the aliasing check takes.
  std::vector<float> gappy(2 * kCount + 16);
  strided();
  d_.q_strides.token = d_.out_strides.token = 2 * kD;
  t_.q = gappy.data();
  t_.out = gappy.data() + kD;
  EXPECT_TRUE(fails_with(call(), POSENC_ERROR_ALIASING, "tensors->q"));
  t_.q = q_.data();
  t_.out = out_.data();
  EXPECT_TRUE(out_.payload_untouched());
  strided();
  EXPECT_EQ(call(), POSENC_OK) << posenc_last_error();
}

TEST_F(AttentionErrors, WorkspaceTooSmall) {
  size_t bytes = 0;
  ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d_, &bytes), POSENC_OK);
  std::vector<unsigned char> workspace(bytes);
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, workspace.data(), bytes - 1),
                         POSENC_ERROR_INVALID_ARGUMENT, "workspace_bytes"));
  EXPECT_TRUE(out_.payload_untouched());
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, workspace.data(), bytes), POSENC_OK);
}

// Negative enum fields are refused by name before the enum is used (UBSan
// checks that none is loaded), by the call and by the size query.
TEST_F(AttentionErrors, NegativeEnums) {
  size_t bytes = 12345;
  store_enum(d_.layout, -1);
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->layout"));
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->layout"));
  store_enum(d_.dtype, -1);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->dtype"));
  store_enum(d_.out_dtype, -1);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->out_dtype"));
  store_enum(d_.bias, -1);
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->bias"));
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->bias"));
  EXPECT_EQ(bytes, 12345u);
}

// Without a mask (mask_batch 0) the other mask fields are not read: any
// values there, a negative dtype included (UBSan checks that it is never
// loaded), leave the call and its size as they are.
TEST_F(AttentionErrors, MaskFieldsWithoutAMaskAreNotRead) {
  size_t bytes = 0, bytes_with_junk = 0;
  ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d_, &bytes), POSENC_OK);
  ASSERT_EQ(call(), POSENC_OK) << posenc_last_error();
  const std::vector<float> expected(out_.data(), out_.data() + kCount);
  store_enum(d_.mask_dtype, -1);
  d_.mask_heads = -7;
  d_.mask_q_len = 1 << 20;
  ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d_, &bytes_with_junk), POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(bytes_with_junk, bytes);
  std::fill(out_.data(), out_.data() + kCount, 0.0f);
  ASSERT_EQ(call(), POSENC_OK) << posenc_last_error();
  EXPECT_EQ(std::vector<float>(out_.data(), out_.data() + kCount), expected);
}

// Tensors must be aligned to their elements (core.h), else refused by name.
TEST_F(AttentionErrors, MisalignedTensors) {
  t_.v = offset_bytes(v_.data(), 2);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->v"));
  t_.table = offset_bytes(table_.data(), 1);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->table"));
  // A bf16 output needs 2 bytes only; 1 byte off is refused.
  d_.out_dtype = POSENC_BF16;
  t_.out = offset_bytes(out_.data(), 1);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "tensors->out"));
  d_.out_dtype = POSENC_BF16;
  t_.out = offset_bytes(out_.data(), 2);
  EXPECT_EQ(call(), POSENC_OK) << posenc_last_error();
}

// bf16 attention and the bf16 bottleneck block run on every CPU (widened
// to fp32 where the attention's GEMMs do not run in bf16): the ops and their size
// queries succeed alike.
TEST_F(AttentionErrors, Bf16RunsAndIsSizedOnEveryCpu) {
  const std::vector<uint16_t> q = to_bf16(q_), k = to_bf16(k_), v = to_bf16(v_),
                              table = to_bf16(table_);
  d_.dtype = POSENC_BF16;
  t_ = posenc_attention_tensors{q.data(), k.data(),    v.data(), table.data(), nullptr, nullptr,
                                nullptr,  out_.data(), nullptr,  nullptr,      nullptr, nullptr,
                                nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(call(), POSENC_OK) << posenc_last_error();
  size_t bytes = 0;
  EXPECT_EQ(posenc_attention_workspace_size(nullptr, &d_, &bytes), POSENC_OK)
      << posenc_last_error();

  posenc_bottleneck_desc bd;
  posenc_bottleneck_desc_init(&bd, 1, 4, 2, 3, 1, 4);
  bd.dtype = POSENC_BF16;
  const std::vector<uint16_t> fmap(4 * 6, 0x3F00), w(12 * 4, 0x3DCD), rh(3 * 4, 0x3E4D),
      rw(5 * 4, 0x3E9A);
  std::vector<float> bout(4 * 6);
  EXPECT_EQ(posenc_bottleneck_mhsa(nullptr, &bd, fmap.data(), w.data(), rh.data(), rw.data(),
                                   bout.data(), nullptr, 0),
            POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(posenc_bottleneck_workspace_size(nullptr, &bd, &bytes), POSENC_OK)
      << posenc_last_error();
}

// Sizes whose workspace overflows, or past posenc_attention's bounds, are
// refused by the field's name before any arithmetic on them (heads = 2^61
// once wrapped to a 576-byte workspace).
TEST(BottleneckErrors, HugeSizesAreNamed) {
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, 1, 4, 2, 3, 1, 4);
  const std::vector<float> fmap(4 * 6, 0.5f), w(12 * 4, 0.1f), rh(3 * 4, 0.2f), rw(5 * 4, 0.3f);
  GuardedFloats out(4 * 6);
  struct Huge {
    int64_t posenc_bottleneck_desc::*field;
    int64_t value;
    const char* name;
  };
  const Huge huge[] = {
      {&posenc_bottleneck_desc::heads, int64_t(1) << 61, "desc->heads"},
      {&posenc_bottleneck_desc::heads, INT64_MAX, "desc->heads"},
      {&posenc_bottleneck_desc::head_dim, int64_t(1) << 62, "desc->head_dim"},
      {&posenc_bottleneck_desc::channels, INT64_MAX, "desc->channels"},
      {&posenc_bottleneck_desc::batch, int64_t(1) << 60, "desc->batch"},
      {&posenc_bottleneck_desc::width, INT64_MAX, "desc->width"},
      // posenc_attention's bounds on its sizes: head sizes
      // below 2^39, q_len and kv_len below 2^38.
      {&posenc_bottleneck_desc::head_dim, int64_t(1) << 39, "desc->head_dim"},
      {&posenc_bottleneck_desc::value_head_dim, int64_t(1) << 39, "desc->value_head_dim"},
      {&posenc_bottleneck_desc::height, int64_t(1) << 37, "desc->height * desc->width"}};
  for (const Huge& h : huge) {
    posenc_bottleneck_desc bad = d;
    bad.*h.field = h.value;
    size_t bytes = 12345;
    EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, &bytes),
                           POSENC_ERROR_OVERFLOW, h.name));
    EXPECT_EQ(bytes, 12345u);
    EXPECT_TRUE(fails_with(posenc_bottleneck_mhsa(nullptr, &bad, fmap.data(), w.data(),
                                                  rh.data(), rw.data(), out.data(), nullptr, 0),
                           POSENC_ERROR_OVERFLOW, h.name));
  }
  EXPECT_TRUE(out.payload_untouched());
  posenc_bottleneck_desc bad = d;
  store_enum(bad.dtype, -1);
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, nullptr),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->dtype"));
  bad = d;
  store_enum(bad.out_dtype, -1);
  EXPECT_TRUE(fails_with(posenc_bottleneck_mhsa(nullptr, &bad, fmap.data(), w.data(), rh.data(),
                                                rw.data(), out.data(), nullptr, 0),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->out_dtype"));
  EXPECT_TRUE(fails_with(posenc_bottleneck_mhsa(nullptr, &d, fmap.data(),
                                                offset_bytes(w.data(), 2), rh.data(), rw.data(),
                                                out.data(), nullptr, 0),
                         POSENC_ERROR_INVALID_ARGUMENT, "w_qkv"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(BottleneckErrors, ArgumentsAreNamed) {
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, 1, 4, 2, 3, 1, 4);
  const std::vector<float> fmap(4 * 6, 0.5f), w(12 * 4, 0.1f), rh(3 * 4, 0.2f), rw(5 * 4, 0.3f);
  GuardedFloats out(4 * 6);
  auto call = [&](const posenc_bottleneck_desc& desc, const void* f, void* o) {
    return posenc_bottleneck_mhsa(nullptr, &desc, f, w.data(), rh.data(), rw.data(), o,
                                  nullptr, 0);
  };
  posenc_bottleneck_desc bad = d;
  bad.channels = 0;
  EXPECT_TRUE(fails_with(call(bad, fmap.data(), out.data()), POSENC_ERROR_INVALID_ARGUMENT,
                         "desc->channels"));
  bad = d;
  bad.scale = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(fails_with(call(bad, fmap.data(), out.data()), POSENC_ERROR_INVALID_ARGUMENT,
                         "desc->scale"));
  EXPECT_TRUE(fails_with(call(d, nullptr, out.data()), POSENC_ERROR_NULL_POINTER, "fmap"));
  EXPECT_TRUE(fails_with(call(d, fmap.data(), const_cast<float*>(fmap.data())),
                         POSENC_ERROR_ALIASING, "fmap"));
  EXPECT_TRUE(fails_with(posenc_bottleneck_mhsa(nullptr, &d, fmap.data(), w.data(), rh.data(),
                                                rw.data(), out.data(), out.data() + 100, 1),
                         POSENC_ERROR_INVALID_ARGUMENT, "workspace_bytes"));
  EXPECT_TRUE(out.payload_untouched());
  ASSERT_EQ(call(d, fmap.data(), out.data()), POSENC_OK) << posenc_last_error();
  EXPECT_TRUE(out.guards_intact());

  size_t bytes = 12345;
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &d, nullptr),
                         POSENC_ERROR_NULL_POINTER, "bytes"));
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, nullptr, &bytes),
                         POSENC_ERROR_NULL_POINTER, "desc"));
  bad = d;
  bad.heads = -2;
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, &bytes),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->heads"));
  EXPECT_EQ(bytes, 12345u);
  // heads * head_dim overflows int64 (found by the fuzzer: was signed overflow).
  bad = d;
  bad.heads = (int64_t(1) << 61) + 1;
  bad.head_dim = 12;
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, &bytes),
                         POSENC_ERROR_OVERFLOW, "desc"));
  EXPECT_EQ(bytes, 12345u);
  ASSERT_EQ(posenc_bottleneck_workspace_size(nullptr, &d, &bytes), POSENC_OK);
  EXPECT_GT(bytes, 0u);
}

// The options of 0.3: each bad value named, nothing written; the tensors
// struct's pointers named with "tensors->".
TEST(BottleneckErrors, OptionsAreNamed) {
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, 1, 4, 2, 3, 1, 4);
  const std::vector<float> fmap(4 * 6, 0.5f), w(12 * 4, 0.1f), bias(12, 0.2f), rh(3 * 4, 0.2f),
      rw(5 * 4, 0.3f);
  GuardedFloats out(4 * 6);
  posenc_bottleneck_tensors t{fmap.data(), w.data(), bias.data(), rh.data(), rw.data(), out.data()};
  auto expect_refused = [&](const posenc_bottleneck_desc& bad, posenc_status status,
                            const char* name) {
    size_t bytes = 12345;
    EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, &bytes), status, name));
    EXPECT_EQ(bytes, 12345u);
    EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, &bad, &t, nullptr, 0), status, name));
  };
  posenc_bottleneck_desc bad = d;
  bad.bias_uses_scaled_q = 2;
  expect_refused(bad, POSENC_ERROR_INVALID_ARGUMENT, "desc->bias_uses_scaled_q");
  for (int64_t stride : {int64_t(0), int64_t(3), int64_t(-2)}) {
    bad = d;
    bad.stride = stride;
    expect_refused(bad, POSENC_ERROR_INVALID_ARGUMENT, "desc->stride");
  }
  bad = d;
  bad.height = 1;  // AvgPool2d(2, 2) has no output row
  bad.stride = 2;
  expect_refused(bad, POSENC_ERROR_INVALID_ARGUMENT, "desc->stride");
  bad = d;
  bad.value_head_dim = INT64_MAX / 2;  // the workspace overflows
  expect_refused(bad, POSENC_ERROR_OVERFLOW, "desc->value_head_dim");
  bad.value_head_dim = -1;
  expect_refused(bad, POSENC_ERROR_INVALID_ARGUMENT, "desc->value_head_dim");

  EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, &d, nullptr, nullptr, 0),
                         POSENC_ERROR_NULL_POINTER, "tensors"));
  EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, nullptr, &t, nullptr, 0),
                         POSENC_ERROR_NULL_POINTER, "desc"));
  posenc_bottleneck_tensors bad_t = t;
  bad_t.rel_w = nullptr;
  EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, &d, &bad_t, nullptr, 0),
                         POSENC_ERROR_NULL_POINTER, "tensors->rel_w"));
  bad_t = t;
  bad_t.qkv_bias = offset_bytes(bias.data(), 2);
  EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, &d, &bad_t, nullptr, 0),
                         POSENC_ERROR_INVALID_ARGUMENT, "tensors->qkv_bias"));
  bad_t = t;
  bad_t.qkv_bias = out.data() + 10;  // overlaps out
  EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, &d, &bad_t, nullptr, 0),
                         POSENC_ERROR_ALIASING, "tensors->qkv_bias"));
  // The workspace must not overlap the bias either.
  std::vector<uint8_t> workspace(1 << 20);
  size_t bytes = 0;
  ASSERT_EQ(posenc_bottleneck_workspace_size(nullptr, &d, &bytes), POSENC_OK);
  bad_t = t;
  bad_t.qkv_bias = reinterpret_cast<const float*>(workspace.data()) + 16;
  EXPECT_TRUE(fails_with(posenc_bottleneck(nullptr, &d, &bad_t, workspace.data(), bytes),
                         POSENC_ERROR_ALIASING, "tensors->qkv_bias"));
  EXPECT_TRUE(out.payload_untouched());

  // Stride 2 writes [batch, heads*head_dim, 1, 1]: out of 4 floats is enough.
  bad = d;
  bad.stride = 2;
  GuardedFloats pooled(4);
  t.out = pooled.data();
  ASSERT_EQ(posenc_bottleneck(nullptr, &bad, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  EXPECT_TRUE(pooled.guards_intact());
}

// Empty calls: a batch, heads or q_len of 0 writes nothing, a kv_len of 0
// writes rows of zeros; either way every other argument is checked, tensors
// without elements may be NULL, and the workspace is 0 bytes.
class AttentionEmptyCalls : public ::testing::Test {
 protected:
  // B2 H2 Tq3 Tk4 D4, BHTD, F32, no bias: the call each test empties.
  AttentionEmptyCalls() { posenc_attention_desc_init(&d_, 2, 2, 3, 4, 4); }

  static size_t product(std::initializer_list<int64_t> sizes) {
    size_t n = 1;
    for (int64_t s : sizes) n *= size_t(s);
    return n;
  }
  // The rows of d_'s 1D relative tables (posenc/attention.h).
  int64_t rows_1d() const {
    if (d_.max_distance > 0) return 2 * d_.max_distance + 1;
    return std::max<int64_t>(std::max<int64_t>(d_.query_offset, 0) + d_.q_len + d_.kv_len - 1, 0);
  }
  // Floats of d_'s bias table, -1 without one.
  int64_t table_floats() const {
    const int64_t heads = d_.tables_per_head ? d_.heads : 1;
    switch (d_.bias) {
      case POSENC_BIAS_ABSOLUTE:
        return heads * d_.kv_len * d_.head_dim;
      case POSENC_BIAS_RELATIVE_1D:
        return heads * rows_1d() * d_.head_dim;
      case POSENC_BIAS_TABLE_1D:
        return d_.heads * (2 * d_.max_distance + 1);
      case POSENC_BIAS_T5:
        return d_.heads * d_.num_buckets;
      case POSENC_BIAS_ALIBI:
        return d_.heads;
      default:
        return -1;
    }
  }

  // Buffers for d_ (dense) and its tensors: NULL for those without
  // elements when `nulls`, else real buffers (of one float at least). out
  // is out_, of `out_floats` floats.
  posenc_attention_tensors tensors(bool nulls) {
    const int64_t kv_heads = d_.kv_heads > 0 ? d_.kv_heads : d_.heads;
    const int64_t dv = d_.value_head_dim > 0 ? d_.value_head_dim : d_.head_dim;
    const auto buffer = [&](std::vector<float>& x, size_t count) -> const float* {
      x.assign(std::max<size_t>(count, 1), 0.5f);
      return nulls && count == 0 ? nullptr : x.data();
    };
    posenc_attention_tensors t{};
    t.q = buffer(q_, product({d_.batch, d_.heads, d_.q_len, d_.head_dim}));
    t.k = buffer(k_, product({d_.batch, kv_heads, d_.kv_len, d_.head_dim}));
    t.v = buffer(v_, product({d_.batch, kv_heads, d_.kv_len, dv}));
    if (table_floats() >= 0) t.table = buffer(table_, size_t(table_floats()));
    if (d_.relative_values) {
      t.value_table = buffer(values_, product({d_.tables_per_head ? d_.heads : 1, rows_1d(), dv}));
    }
    if (d_.mask_batch > 0) {
      t.mask = buffer(mask_, product({d_.mask_batch, d_.mask_heads, d_.mask_q_len, d_.kv_len}));
    }
    const size_t out_floats = product({d_.batch, d_.heads, d_.q_len, dv});
    out_ = std::make_unique<GuardedFloats>(std::max<size_t>(out_floats, 1));
    t.out = nulls && out_floats == 0 ? nullptr : out_->data();
    return t;
  }

  // The call succeeds with NULL tensors and with real ones, writes nothing,
  // and asks for no workspace.
  ::testing::AssertionResult writes_nothing() {
    size_t bytes = 12345;
    if (posenc_attention_workspace_size(nullptr, &d_, &bytes) != POSENC_OK || bytes != 0) {
      return ::testing::AssertionFailure()
             << "workspace " << bytes << " bytes (" << posenc_last_error() << ")";
    }
    for (bool nulls : {true, false}) {
      const posenc_attention_tensors t = tensors(nulls);
      if (posenc_attention(nullptr, &d_, &t, nullptr, 0) != POSENC_OK) {
        return ::testing::AssertionFailure()
               << (nulls ? "NULL" : "real") << " tensors: " << posenc_last_error();
      }
      if (!out_->payload_untouched()) return ::testing::AssertionFailure() << "out was written";
    }
    return ::testing::AssertionSuccess();
  }

  posenc_attention_desc d_;
  std::vector<float> q_, k_, v_, table_, values_, mask_;
  std::unique_ptr<GuardedFloats> out_;
};

// The biases and options whose tables and tensors follow the count axes.
std::vector<std::pair<const char*, void (*)(posenc_attention_desc&)>> empty_call_options() {
  return {
      {"none", [](posenc_attention_desc&) {}},
      {"absolute", [](posenc_attention_desc& d) { d.bias = POSENC_BIAS_ABSOLUTE; }},
      {"relative_1d and values, per head",
       [](posenc_attention_desc& d) {
         d.bias = POSENC_BIAS_RELATIVE_1D;
         d.relative_values = 1;
         d.tables_per_head = 1;
         d.query_offset = 2;
       }},
      {"clipped relative_1d",
       [](posenc_attention_desc& d) {
         d.bias = POSENC_BIAS_RELATIVE_1D;
         d.max_distance = 2;
       }},
      {"table_1d",
       [](posenc_attention_desc& d) {
         d.bias = POSENC_BIAS_TABLE_1D;
         d.max_distance = 3;
       }},
      {"t5",
       [](posenc_attention_desc& d) {
         d.bias = POSENC_BIAS_T5;
         d.num_buckets = 8;
         d.max_distance = 16;
         d.bidirectional = 1;
       }},
      {"alibi", [](posenc_attention_desc& d) { d.bias = POSENC_BIAS_ALIBI; }},
      {"mask, causal, grouped, bf16 out",
       [](posenc_attention_desc& d) {
         d.mask_batch = 1;
         d.mask_heads = d.heads;
         d.mask_q_len = 1;
         d.causal = 1;
         d.kv_heads = d.heads > 0 ? 1 : 0;
         d.out_dtype = POSENC_BF16;
         d.value_head_dim = 3;
       }},
  };
}

TEST_F(AttentionEmptyCalls, NoRowsWriteNothing) {
  for (const auto& [name, option] : empty_call_options()) {
    for (int64_t posenc_attention_desc::*axis :
         {&posenc_attention_desc::batch, &posenc_attention_desc::heads,
          &posenc_attention_desc::q_len}) {
      for (int64_t kv_len : {4, 0}) {
        posenc_attention_desc_init(&d_, 2, 2, 3, kv_len, 4);
        d_.*axis = 0;
        option(d_);
        EXPECT_TRUE(writes_nothing()) << name << ": B" << d_.batch << " H" << d_.heads << " Tq"
                                      << d_.q_len << " Tk" << kv_len;
      }
    }
  }
}

TEST_F(AttentionEmptyCalls, NoKeysGiveZeros) {
  for (const auto& [name, option] : empty_call_options()) {
    for (bool nulls : {true, false}) {
      posenc_attention_desc_init(&d_, 2, 2, 3, 0, 4);
      option(d_);
      size_t bytes = 12345;
      ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d_, &bytes), POSENC_OK) << name;
      EXPECT_EQ(bytes, 0u) << name;
      const posenc_attention_tensors t = tensors(nulls);
      ASSERT_EQ(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_OK)
          << name << ": " << posenc_last_error();
      const size_t count =
          product({2, 2, 3, d_.value_head_dim > 0 ? d_.value_head_dim : d_.head_dim});
      for (float x : as_floats(*out_, count, d_.out_dtype)) ASSERT_EQ(x, 0.0f) << name;
      EXPECT_TRUE(out_->guards_intact()) << name;
    }
  }
  // The per-sequence tensors are checked against kv_len 0: lengths in [0, 0].
  posenc_attention_desc_init(&d_, 2, 2, 3, 0, 4);
  posenc_attention_tensors t = tensors(true);
  const int32_t lengths[2] = {0, 1};
  t.kv_lengths = lengths;
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t, nullptr, 0),
                         POSENC_ERROR_INVALID_ARGUMENT, "tensors->kv_lengths[1]"));
  t.kv_lengths = nullptr;
  t.q_lengths = lengths;
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
}

// Under STRIDED only out's rows are zeroed, not the gaps between them.
TEST_F(AttentionEmptyCalls, NoKeysZeroOnlyStridedRows) {
  posenc_attention_desc_init(&d_, 2, 2, 3, 0, 4);
  d_.layout = POSENC_LAYOUT_STRIDED;
  // Rows of 4 floats 6 apart, heads 18 apart, batch items 40 apart.
  d_.out_strides = posenc_token_strides{40, 18, 6};
  d_.q_strides = posenc_token_strides{24, 12, 4};
  posenc_attention_tensors t = tensors(true);
  GuardedFloats out(80);
  t.out = out.data();
  ASSERT_EQ(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  std::vector<bool> row(80, false);
  for (int b = 0; b < 2; ++b) {
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 3; ++i) {
        for (int c = 0; c < 4; ++c) row[size_t(40 * b + 18 * h + 6 * i + c)] = true;
      }
    }
  }
  for (size_t e = 0; e < row.size(); ++e) {
    EXPECT_EQ(out.data()[e], row[e] ? 0.0f : 12345.0f) << "element " << e;
  }
  EXPECT_TRUE(out.guards_intact());
}

// The kinds that tie the lengths to a map need them; RELATIVE_2D and
// TABLE_2D take only batch or heads 0.
TEST_F(AttentionEmptyCalls, MapKindsNeedTheirLengths) {
  const std::vector<float> table(64, 0.1f);
  for (posenc_attention_bias bias : {POSENC_BIAS_RELATIVE_2D, POSENC_BIAS_TABLE_2D}) {
    const auto map_desc = [&](int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len) {
      posenc_attention_desc_init(&d_, batch, heads, q_len, kv_len, 4);
      d_.bias = bias;
      d_.map_height = 2;
      d_.map_width = 3;
    };
    const auto call = [&](bool nulls) {
      posenc_attention_tensors t = tensors(nulls);
      if (bias == POSENC_BIAS_RELATIVE_2D) {
        t.table_h = t.table_w = table.data();
      } else {
        t.table = d_.heads > 0 || !nulls ? table.data() : nullptr;
      }
      return posenc_attention(nullptr, &d_, &t, nullptr, 0);
    };
    for (int64_t posenc_attention_desc::*axis :
         {&posenc_attention_desc::batch, &posenc_attention_desc::heads}) {
      map_desc(2, 2, 6, 6);
      d_.*axis = 0;
      for (bool nulls : {true, false}) {
        EXPECT_EQ(call(nulls), POSENC_OK) << bias << ": " << posenc_last_error();
        EXPECT_TRUE(out_->payload_untouched());
      }
    }
    map_desc(2, 2, 0, 6);
    EXPECT_TRUE(fails_with(call(false), POSENC_ERROR_SHAPE_MISMATCH, "q_len"));
    map_desc(2, 2, 6, 0);
    EXPECT_TRUE(fails_with(call(false), POSENC_ERROR_SHAPE_MISMATCH, "kv_len"));
    size_t bytes = 12345;
    EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                           POSENC_ERROR_SHAPE_MISMATCH, "kv_len"));
    EXPECT_EQ(bytes, 12345u);
    EXPECT_TRUE(out_->payload_untouched());
  }
}

// An empty call still checks everything else, with the usual status and
// name, and writes nothing.
TEST_F(AttentionEmptyCalls, OtherArgumentsAreStillChecked) {
  // Each case on a desc with batch 0 (nothing written) and one with kv_len 0
  // (zeros written when valid).
  const auto refused = [&](auto change, posenc_status status, const char* name) {
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    for (int64_t posenc_attention_desc::*axis :
         {&posenc_attention_desc::batch, &posenc_attention_desc::kv_len}) {
      posenc_attention_desc_init(&d_, 2, 2, 3, 4, 4);
      d_.*axis = 0;
      posenc_attention_tensors t = tensors(false);
      change(d_, t);
      const posenc_status got = posenc_attention(nullptr, &d_, &t, nullptr, 0);
      if (result) result = fails_with(got, status, name);
      if (result && !out_->payload_untouched()) {
        result = ::testing::AssertionFailure() << "out was written";
      }
    }
    return result;
  };
  using D = posenc_attention_desc;
  using T = posenc_attention_tensors;
  const auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  EXPECT_TRUE(refused([](D& d, T&) { d.batch = d.kv_len = -1; }, kInvalid,
                      "desc->batch must be >= 0 (got -1)"));
  EXPECT_TRUE(refused([](D& d, T&) { d.heads = -2; }, kInvalid, "desc->heads must be >= 0"));
  EXPECT_TRUE(refused([](D& d, T&) { d.q_len = -3; }, kInvalid, "desc->q_len must be >= 0"));
  EXPECT_TRUE(refused([](D& d, T&) { d.kv_len = -4; }, kInvalid, "desc->kv_len must be >= 0"));
  EXPECT_TRUE(refused([](D& d, T&) { d.head_dim = 0; }, kInvalid, "desc->head_dim must be >= 1"));
  EXPECT_TRUE(refused([](D& d, T&) { store_enum(d.layout, 5); }, kInvalid, "desc->layout"));
  EXPECT_TRUE(refused([](D& d, T&) { store_enum(d.dtype, 3); }, kInvalid, "desc->dtype"));
  EXPECT_TRUE(refused([](D& d, T&) { store_enum(d.bias, 9); }, kInvalid, "desc->bias"));
  EXPECT_TRUE(refused([](D& d, T&) { d.scale = NAN; }, kInvalid, "desc->scale"));
  EXPECT_TRUE(refused([](D& d, T&) { d.value_head_dim = -1; }, kInvalid, "desc->value_head_dim"));
  EXPECT_TRUE(refused([](D& d, T&) { d.q_len = INT64_MAX / 2; }, POSENC_ERROR_OVERFLOW, "q_len"));
  EXPECT_TRUE(refused([](D& d, T&) { d.kv_heads = 3; }, kInvalid, "desc->kv_heads"));
  // Rows too long to address, whether or not there are rows.
  EXPECT_TRUE(refused([](D& d, T&) { d.head_dim = int64_t(1) << 62; }, POSENC_ERROR_OVERFLOW,
                      "tensors->q"));
  EXPECT_TRUE(refused(
      [](D& d, T&) {
        d.layout = POSENC_LAYOUT_STRIDED;
        d.q_len = 1;
        d.head_dim = int64_t(1) << 62;
      },
      POSENC_ERROR_OVERFLOW, "tensors->q"));
  EXPECT_TRUE(refused([](D&, T& t) { t.q = offset_bytes(t.q, 2); }, kInvalid, "tensors->q"));
  EXPECT_TRUE(refused([](D&, T& t) { t.out = offset_bytes(t.out, 1); }, kInvalid, "tensors->out"));
  EXPECT_TRUE(refused([](D&, T& t) { t.table = t.q; }, kInvalid, "tensors->table"));
  // A shared 1D table has rows (q_len - 1 of them without keys).
  EXPECT_TRUE(refused([](D& d, T&) { d.bias = POSENC_BIAS_RELATIVE_1D; }, POSENC_ERROR_NULL_POINTER,
                      "tensors->table"));
  EXPECT_TRUE(refused(
      [](D& d, T&) {
        d.layout = POSENC_LAYOUT_STRIDED;
        d.q_strides.batch = -1;
      },
      kInvalid, "desc->q_strides.batch"));
  EXPECT_TRUE(refused([](D& d, T&) { d.k_strides.head = 4; }, kInvalid, "desc->k_strides"));
  EXPECT_TRUE(refused(
      [](D& d, T&) {
        d.mask_batch = 1;
        d.mask_heads = 3;
      },
      kInvalid, "desc->mask_heads"));
  EXPECT_TRUE(refused(
      [](D& d, T&) {
        d.bias = POSENC_BIAS_T5;
        d.num_buckets = 1;
      },
      kInvalid, "desc->num_buckets"));
  // A tensor with elements is required: q without keys, k without queries.
  posenc_attention_desc_init(&d_, 2, 2, 3, 0, 4);
  posenc_attention_tensors t = tensors(true);
  t.q = nullptr;
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_ERROR_NULL_POINTER,
                         "tensors->q"));
  posenc_attention_desc_init(&d_, 2, 2, 0, 4, 4);
  t = tensors(true);
  t.k = nullptr;
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_ERROR_NULL_POINTER,
                         "tensors->k"));
  // kv_len 0 writes out: it must not overlap an input.
  posenc_attention_desc_init(&d_, 2, 2, 3, 0, 4);
  t = tensors(false);
  t.q = out_->data() + 8;
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_ERROR_ALIASING,
                         "tensors->out"));
  EXPECT_TRUE(out_->payload_untouched());
  // With no heads, nothing but the per-sequence tensors bounds batch: they
  // are sized before they are read.
  posenc_attention_desc_init(&d_, INT64_MAX / 6, 0, 1, 1, 1);  // q's bytes fit, int64s' do not
  d_.index_type = POSENC_INDEX_INT64;
  t = tensors(true);
  const int64_t lengths[2] = {1, 1};
  t.kv_lengths = lengths;
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t, nullptr, 0), POSENC_ERROR_OVERFLOW,
                         "tensors->kv_lengths"));
  // k's heads divide q's, also with no heads: k with 2 heads for q's none.
  posenc_attention_desc_init(&d_, 2, 0, 3, 4, 4);
  d_.kv_heads = 2;
  size_t bytes = 12345;
  EXPECT_TRUE(fails_with(posenc_attention_workspace_size(nullptr, &d_, &bytes),
                         POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_heads"));
  EXPECT_EQ(bytes, 12345u);
}

// BoTNet's block over a batch of 0 feature maps: nothing read or written;
// the other sizes stay >= 1 and everything else is checked.
TEST_F(AttentionEmptyCalls, BottleneckBatchZero) {
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, 0, 4, 2, 3, 1, 4);
  const std::vector<float> fmap(1, 0.5f), w(12 * 4, 0.1f), rh(3 * 4, 0.2f), rw(5 * 4, 0.3f);
  GuardedFloats out(1);
  size_t bytes = 12345;
  ASSERT_EQ(posenc_bottleneck_workspace_size(nullptr, &d, &bytes), POSENC_OK);
  EXPECT_EQ(bytes, 0u);
  for (const float* f : {static_cast<const float*>(nullptr), fmap.data()}) {
    float* o = f == nullptr ? nullptr : out.data();
    EXPECT_EQ(posenc_bottleneck_mhsa(nullptr, &d, f, w.data(), rh.data(), rw.data(), o, nullptr, 0),
              POSENC_OK)
        << posenc_last_error();
    const posenc_bottleneck_tensors t{f, w.data(), w.data(), rh.data(), rw.data(), o};
    EXPECT_EQ(posenc_bottleneck(nullptr, &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  }
  EXPECT_TRUE(out.payload_untouched());
  const auto refused = [&](const posenc_bottleneck_desc& desc, const float* f, const float* w_qkv,
                           posenc_status status, const char* name) {
    EXPECT_TRUE(fails_with(posenc_bottleneck_mhsa(nullptr, &desc, f, w_qkv, rh.data(), rw.data(),
                                                  out.data(), nullptr, 0),
                           status, name));
  };
  posenc_bottleneck_desc bad = d;
  bad.batch = -1;
  refused(bad, fmap.data(), w.data(), POSENC_ERROR_INVALID_ARGUMENT, "desc->batch must be >= 0");
  for (int64_t posenc_bottleneck_desc::*size :
       {&posenc_bottleneck_desc::channels, &posenc_bottleneck_desc::height,
        &posenc_bottleneck_desc::width, &posenc_bottleneck_desc::heads,
        &posenc_bottleneck_desc::head_dim}) {
    bad = d;
    bad.*size = 0;
    refused(bad, fmap.data(), w.data(), POSENC_ERROR_INVALID_ARGUMENT, "must be >= 1");
  }
  bad = d;
  bad.stride = 3;
  refused(bad, fmap.data(), w.data(), POSENC_ERROR_INVALID_ARGUMENT, "desc->stride");
  refused(d, offset_bytes(fmap.data(), 2), w.data(), POSENC_ERROR_INVALID_ARGUMENT, "fmap");
  refused(d, fmap.data(), nullptr, POSENC_ERROR_NULL_POINTER, "w_qkv");
  bad = d;
  bad.channels = int64_t(1) << 60;  // a workspace of no feature maps, but one's overflows
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, &bytes),
                         POSENC_ERROR_OVERFLOW, "desc->channels"));
  bad = d;
  bad.channels = int64_t(1) << 56;  // fits per token, not per map (1 KiB a token)
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &bad, &bytes),
                         POSENC_ERROR_OVERFLOW, "desc->height * desc->width * (desc->channels"));
  EXPECT_TRUE(fails_with(posenc_bottleneck_workspace_size(nullptr, &d, nullptr),
                         POSENC_ERROR_NULL_POINTER, "bytes"));
  EXPECT_TRUE(out.payload_untouched());
}

}  // namespace
}  // namespace posenc::test
