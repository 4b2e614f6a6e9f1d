// Bad input to the attention C ABI: the documented status, a message naming
// the argument, and nothing written.
#include <gtest/gtest.h>

#include <climits>
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
                                  nullptr,   nullptr,   nullptr,   out_.data()};
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
                                  nullptr,   nullptr,   nullptr,   out_.data()};
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
                         POSENC_ERROR_OVERFLOW, "desc (q)"));
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

TEST_F(AttentionErrors, WorkspaceTooSmall) {
  size_t bytes = 0;
  ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d_, &bytes), POSENC_OK);
  std::vector<unsigned char> workspace(bytes);
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, workspace.data(), bytes - 1),
                         POSENC_ERROR_INVALID_ARGUMENT, "workspace_bytes"));
  EXPECT_TRUE(out_.payload_untouched());
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, workspace.data(), bytes), POSENC_OK);
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

}  // namespace
}  // namespace posenc::test
