// The attention family's runners for the concurrency and determinism tests:
// 1D relative with causal mask and relative values over several key blocks,
// 2D relative in bf16 (where oneDNN has bf16 GEMMs), and the bottleneck block.
#include <gtest/gtest.h>

#include "compare.hpp"
#include "op_runners.hpp"

namespace posenc::test {
namespace {

std::vector<float> attention_1d(posenc_context* ctx) {
  static const std::vector<float> q = random_floats(3 * 40 * 16, 31);
  static const std::vector<float> kv = random_floats(3 * 2200 * 16, 32);
  static const std::vector<float> table = random_floats(2 * (2 * 300 + 1) * 16, 33);
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, 3, 40, 2200, 16);
  d.layout = POSENC_LAYOUT_BTHD;
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.max_distance = 300;
  d.causal = 1;
  d.query_offset = 2150;
  d.relative_values = 1;
  std::vector<float> out(q.size());
  const posenc_attention_tensors t{q.data(), kv.data(), kv.data(), table.data(), nullptr,
                                   nullptr,  table.data() + (2 * 300 + 1) * 16, out.data()};
  EXPECT_EQ(posenc_attention(ctx, &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  return out;
}

std::vector<float> attention_2d_bf16(posenc_context* ctx) {
  static const std::vector<uint16_t> qkv = to_bf16(random_floats(2 * 4 * 9 * 11 * 32, 34));
  static const std::vector<uint16_t> rel = to_bf16(random_floats(4 * (17 + 21) * 32, 35));
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 2, 4, 99, 99, 32);
  d.dtype = POSENC_BF16;
  d.bias = POSENC_BIAS_RELATIVE_2D;
  d.map_height = 9;
  d.map_width = 11;
  d.tables_per_head = 1;
  std::vector<float> out(size_t(2 * 4 * 99 * 32));
  const posenc_attention_tensors t{qkv.data(), qkv.data(), qkv.data(), nullptr,
                                   rel.data(), rel.data() + 4 * 17 * 32, nullptr, out.data()};
  const posenc_status status = posenc_attention(ctx, &d, &t, nullptr, 0);
  EXPECT_TRUE(status == POSENC_OK || status == POSENC_ERROR_UNSUPPORTED) << posenc_last_error();
  return out;
}

std::vector<float> bottleneck(posenc_context* ctx) {
  static const std::vector<float> fmap = random_floats(2 * 24 * 7 * 5, 36);
  static const std::vector<float> w = random_floats(3 * 2 * 8 * 24, 37);
  static const std::vector<float> rel = random_floats((13 + 9) * 8, 38);
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, 2, 24, 7, 5, 2, 8);
  std::vector<float> out(size_t(2 * 16 * 7 * 5));
  EXPECT_EQ(posenc_bottleneck_mhsa(ctx, &d, fmap.data(), w.data(), rel.data(),
                                   rel.data() + 13 * 8, out.data(), nullptr, 0),
            POSENC_OK)
      << posenc_last_error();
  return out;
}

}  // namespace

std::vector<OpRunner> attention_runners() {
  return {{"attention_1d_causal_values", attention_1d},
          {"attention_2d_bf16", attention_2d_bf16},
          {"bottleneck_mhsa", bottleneck}};
}

}  // namespace posenc::test
