// Bad input to the attention C ABI: the documented status, a message naming
// the argument, and nothing written.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
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
                                  nullptr,   nullptr,   nullptr,   out_.data(), nullptr, nullptr, nullptr, nullptr};
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
                                  nullptr,   nullptr,   nullptr,   out_.data(), nullptr, nullptr, nullptr, nullptr};
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
  d_.batch = 0;
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
// to fp32 where oneDNN's bf16 GEMM is not native): the ops and their size
// queries succeed alike.
TEST_F(AttentionErrors, Bf16RunsAndIsSizedOnEveryCpu) {
  const std::vector<uint16_t> q = to_bf16(q_), k = to_bf16(k_), v = to_bf16(v_),
                              table = to_bf16(table_);
  d_.dtype = POSENC_BF16;
  t_ = posenc_attention_tensors{q.data(), k.data(), v.data(), table.data(),
                                nullptr,  nullptr,  nullptr,  out_.data(), nullptr, nullptr, nullptr, nullptr};
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

// Sizes whose workspace overflows are refused by the field's name before any
// arithmetic on them (heads = 2^61 once wrapped to a 576-byte workspace).
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
  const Huge huge[] = {{&posenc_bottleneck_desc::heads, int64_t(1) << 61, "desc->heads"},
                       {&posenc_bottleneck_desc::heads, INT64_MAX, "desc->heads"},
                       {&posenc_bottleneck_desc::head_dim, int64_t(1) << 62, "desc->head_dim"},
                       {&posenc_bottleneck_desc::channels, INT64_MAX, "desc->channels"},
                       {&posenc_bottleneck_desc::batch, int64_t(1) << 60, "desc->batch"},
                       {&posenc_bottleneck_desc::width, INT64_MAX, "desc->width"}};
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

}  // namespace
}  // namespace posenc::test
