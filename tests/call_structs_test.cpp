// The structs a call takes (descs, tensor lists, options, configs,
// positions) are read before anything is written (posenc/core.h), so they
// may lie in the call's own output or workspace: each call here, with its
// structs placed there, gives bit for bit the output of the same call with
// them elsewhere.

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <vector>

#include "compare.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

// A copy of value made in buffer's storage at byte `offset` (a multiple of
// 8, which every struct's alignment divides).
template <class T>
const T* placed_in(void* buffer, size_t offset, const T& value) {
  return new (static_cast<char*>(buffer) + offset) T(value);
}

// Many query blocks, so that the op reads its structs again after the first
// rows are stored: causal, with 1D relative logits and a decode offset.
TEST(CallStructs, AttentionStructsInOutOrTheWorkspace) {
  constexpr int64_t kHeads = 2, kQueries = 200, kKeys = 263, kDim = 16;
  const std::vector<float> q = random_floats(kHeads * kQueries * kDim, 1);
  const std::vector<float> k = random_floats(kHeads * kKeys * kDim, 2);
  const std::vector<float> v = random_floats(kHeads * kKeys * kDim, 3);
  const std::vector<float> table = random_floats((2 * kKeys - 1) * kDim, 4);
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, kHeads, kQueries, kKeys, kDim);
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.causal = 1;
  d.query_offset = kKeys - kQueries;
  std::vector<float> expected(kHeads * kQueries * kDim);
  posenc_attention_tensors t{};
  t.q = q.data();
  t.k = k.data();
  t.v = v.data();
  t.table = table.data();
  t.out = expected.data();
  ASSERT_EQ(posenc_attention(nullptr, &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();

  std::vector<float> out(expected.size());
  t.out = out.data();
  // The desc in head 0's fourth row, the tensors in its 151st.
  const auto* desc_in_out = placed_in(out.data(), 3 * kDim * sizeof(float), d);
  const auto* tensors_in_out = placed_in(out.data(), 150 * kDim * sizeof(float), t);
  ASSERT_EQ(posenc_attention(nullptr, desc_in_out, tensors_in_out, nullptr, 0), POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(out, expected));

  size_t bytes = 0;
  ASSERT_EQ(posenc_attention_workspace_size(nullptr, &d, &bytes), POSENC_OK);
  std::vector<uint64_t> workspace((bytes + 7) / 8);
  std::fill(out.begin(), out.end(), 0.0f);
  const auto* tensors_in_workspace =
      placed_in(workspace.data(), (bytes - sizeof t) / 8 * 8, t);  // at its end
  ASSERT_EQ(posenc_attention(nullptr, &d, tensors_in_workspace, workspace.data(), bytes), POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(out, expected));
}

TEST(CallStructs, PositionBiasDescInOut) {
  posenc_position_bias_desc d;
  posenc_position_bias_desc_init(&d, POSENC_POSITION_BIAS_T5, 2, 5, 16);
  const std::vector<float> table = random_floats(32 * 2, 5);
  std::vector<float> expected(2 * 5 * 16), out(expected.size());
  ASSERT_EQ(posenc_position_bias(nullptr, &d, table.data(), expected.data()), POSENC_OK)
      << posenc_last_error();
  const auto* desc_in_out = placed_in(out.data(), 16 * sizeof(float), d);  // row 1
  ASSERT_EQ(posenc_position_bias(nullptr, desc_in_out, table.data(), out.data()), POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(out, expected));
}

TEST(CallStructs, BottleneckStructsInOutOrTheWorkspace) {
  constexpr int64_t kChannels = 8, kHeight = 4, kWidth = 5, kHeads = 2, kDim = 4;
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, 2, kChannels, kHeight, kWidth, kHeads, kDim);
  const std::vector<float> fmap = random_floats(2 * kChannels * kHeight * kWidth, 6);
  const std::vector<float> w_qkv = random_floats(3 * kHeads * kDim * kChannels, 7);
  const std::vector<float> rel_h = random_floats((2 * kHeight - 1) * kDim, 8);
  const std::vector<float> rel_w = random_floats((2 * kWidth - 1) * kDim, 9);
  std::vector<float> expected(2 * kHeads * kDim * kHeight * kWidth), out(expected.size());
  posenc_bottleneck_tensors t{fmap.data(),  w_qkv.data(), nullptr,
                              rel_h.data(), rel_w.data(), expected.data()};
  ASSERT_EQ(posenc_bottleneck(nullptr, &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  t.out = out.data();
  const auto* desc_in_out = placed_in(out.data(), 0, d);                  // batch 0
  const auto* tensors_in_out = placed_in(out.data(), out.size() * 2, t);  // batch 1
  ASSERT_EQ(posenc_bottleneck(nullptr, desc_in_out, tensors_in_out, nullptr, 0), POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(out, expected));

  size_t bytes = 0;
  ASSERT_EQ(posenc_bottleneck_workspace_size(nullptr, &d, &bytes), POSENC_OK);
  std::vector<uint64_t> workspace((bytes + 7) / 8);
  const auto call_matches = [&](const posenc_bottleneck_desc* desc,
                                const posenc_bottleneck_tensors* tensors) {
    std::fill(out.begin(), out.end(), 0.0f);
    return posenc_bottleneck(nullptr, desc, tensors, workspace.data(), bytes) == POSENC_OK &&
           bitwise_equal(out, expected);
  };
  for (size_t part = 0; part <= 2; ++part) {  // at the workspace's start, middle and end
    const auto at = [&](size_t size) { return (bytes - size) * part / 2 / 8 * 8; };
    EXPECT_TRUE(call_matches(placed_in(workspace.data(), at(sizeof d), d), &t)) << part;
    EXPECT_TRUE(call_matches(&d, placed_in(workspace.data(), at(sizeof t), t))) << part;
  }
}

TEST(CallStructs, RopeConfigAndPositionsInOut) {
  constexpr int64_t kTokens = 300, kHeads = 2, kDim = 64;
  posenc_rope_config config;
  posenc_rope_config_init(&config, kDim);
  config.scaling = POSENC_ROPE_SCALING_YARN;
  config.factor = 4.0;
  config.original_max_positions = 256;
  const posenc_rope_positions positions{7, nullptr, POSENC_ROPE_POSITIONS_INT32};
  const std::vector<float> x = random_floats(kTokens * kHeads * kDim, 10);
  std::vector<float> expected(x.size()), out(x.size());
  ASSERT_EQ(posenc_rope(nullptr, &config, nullptr, &positions, POSENC_ROPE_BTHD, POSENC_F32, 1,
                        kTokens, kHeads, kDim, x.data(), expected.data()),
            POSENC_OK)
      << posenc_last_error();
  const auto* config_in_out = placed_in(out.data(), kHeads * kDim * sizeof(float), config);
  const auto* positions_in_out =
      placed_in(out.data(), 200 * kHeads * kDim * sizeof(float), positions);
  ASSERT_EQ(posenc_rope(nullptr, config_in_out, nullptr, positions_in_out, POSENC_ROPE_BTHD,
                        POSENC_F32, 1, kTokens, kHeads, kDim, x.data(), out.data()),
            POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(out, expected));
}

TEST(CallStructs, RelativeOptionsAndDescInTheirOutputs) {
  constexpr int64_t kHeads = 2, kQueries = 40, kKeys = 50, kDim = 8;
  const posenc_relative_options options{kKeys - kQueries, 6, 1};
  const std::vector<float> q = random_floats(kHeads * kQueries * kDim, 11);
  const std::vector<float> table = random_floats(13 * kDim, 12);
  std::vector<float> expected(kHeads * kQueries * kKeys), out(expected.size());
  ASSERT_EQ(posenc_relative_logits_1d(nullptr, 1, kHeads, kQueries, kKeys, kDim, q.data(),
                                      table.data(), 1, &options, expected.data()),
            POSENC_OK)
      << posenc_last_error();
  const auto* options_in_out = placed_in(out.data(), kKeys * sizeof(float), options);
  ASSERT_EQ(posenc_relative_logits_1d(nullptr, 1, kHeads, kQueries, kKeys, kDim, q.data(),
                                      table.data(), 1, options_in_out, out.data()),
            POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(out, expected));

  constexpr int64_t kX = 6, kY = 7;
  posenc_relative_2d_desc d;
  posenc_relative_2d_desc_init(&d, 1, kHeads, kX, kY, kDim);
  const std::vector<float> q2 = random_floats(kHeads * kX * kY * kDim, 13);
  const std::vector<float> rh = random_floats((2 * kX - 1) * kDim, 14);
  const std::vector<float> rw = random_floats((2 * kY - 1) * kDim, 15);
  std::vector<float> expected_h(kHeads * kX * kY * kX), expected_w(kHeads * kX * kY * kY);
  std::vector<float> rel_h(expected_h.size()), rel_w(expected_w.size());
  ASSERT_EQ(posenc_relative_logits_2d_maps(nullptr, &d, q2.data(), rh.data(), rw.data(),
                                           expected_h.data(), expected_w.data()),
            POSENC_OK)
      << posenc_last_error();
  const auto* desc_in_rel_h = placed_in(rel_h.data(), 0, d);
  ASSERT_EQ(posenc_relative_logits_2d_maps(nullptr, desc_in_rel_h, q2.data(), rh.data(), rw.data(),
                                           rel_h.data(), rel_w.data()),
            POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(bitwise_equal(rel_h, expected_h));
  EXPECT_TRUE(bitwise_equal(rel_w, expected_w));
}

}  // namespace
}  // namespace posenc::test
