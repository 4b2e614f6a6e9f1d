// RoPE ops as runners for the concurrency and determinism tests.
#include <gtest/gtest.h>

#include <memory>

#include "compare.hpp"
#include "op_runners.hpp"

namespace posenc::test {

std::vector<OpRunner> rope_runners() {
  static const std::vector<float> x = random_floats(2 * 64 * 4 * 96, 31);
  static const std::shared_ptr<posenc_rope_cache> cache = [] {
    posenc_rope_config config;
    posenc_rope_config_init(&config, 64);
    config.scaling = POSENC_ROPE_SCALING_YARN;
    config.factor = 4.0;
    config.original_max_positions = 32;
    posenc_rope_cache* raw = nullptr;
    EXPECT_EQ(posenc_rope_cache_create(nullptr, &config, 64, &raw), POSENC_OK);
    return std::shared_ptr<posenc_rope_cache>(raw, posenc_rope_cache_destroy);
  }();
  return {
      {"rope_qk on the fly",
       [](posenc_context* ctx) {
         posenc_rope_config config;
         posenc_rope_config_init(&config, 80);
         config.pairing = POSENC_ROPE_INTERLEAVED;
         const posenc_rope_positions offset{300, nullptr, POSENC_ROPE_POSITIONS_INT64};
         std::vector<float> out(2 * x.size());
         EXPECT_EQ(posenc_rope_qk(ctx, &config, nullptr, &offset, POSENC_ROPE_BTHD, POSENC_F32,
                                  2, 64, 4, 4, 96, x.data(), out.data(), x.data(),
                                  out.data() + x.size()),
                   POSENC_OK)
             << posenc_last_error();
         return out;
       }},
      {"rope with a shared YaRN cache",
       [](posenc_context* ctx) {
         std::vector<float> out(x.size());
         EXPECT_EQ(posenc_rope(ctx, nullptr, cache.get(), nullptr, POSENC_ROPE_BHTD, POSENC_F32,
                               2, 64, 4, 96, x.data(), out.data()),
                   POSENC_OK)
             << posenc_last_error();
         return out;
       }},
  };
}

}  // namespace posenc::test
