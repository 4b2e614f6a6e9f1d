// Self-checks of rotary embeddings (unscaled frequencies theta^(-2j/rotary_dim)).
#include <cmath>
#include <string>

#include "checks.hpp"
#include "reference/rope.hpp"

namespace posenc::cli {
namespace {

reference::RopeReference unscaled(posenc_rope_pairing pairing, int64_t rotary_dim,
                                  posenc_rope_layout layout, int64_t heads, int64_t head_dim,
                                  std::vector<int64_t> positions) {
  reference::RopeReference r{};
  r.pairing = pairing;
  r.rotary_dim = rotary_dim;
  for (int64_t j = 0; j < rotary_dim / 2; ++j) {
    r.inv_freq.push_back(std::pow(10000.0, -double(2 * j) / double(rotary_dim)));
  }
  r.attention_factor = 1.0;
  r.layout = layout;
  r.batch = 1;
  r.tokens = int64_t(positions.size());
  r.heads = heads;
  r.head_dim = head_dim;
  r.positions = std::move(positions);
  return r;
}

}  // namespace

std::vector<Check> rope_checks() {
  return {
      {"rope_qk half rot64/d80 @1000",
       [](posenc_context* ctx) {
         const int64_t tokens = 13, heads = 3, dim = 80;
         std::vector<int64_t> positions;
         for (int64_t t = 0; t < tokens; ++t) positions.push_back(1000 + t);
         const auto ref = unscaled(POSENC_ROPE_HALF_SPLIT, 64, POSENC_ROPE_BTHD, heads, dim,
                                   positions);
         const std::vector<float> q = signal(size_t(tokens * heads * dim), 0.0f);
         std::vector<float> q_out(q.size()), k_out(q.size());
         posenc_rope_config config;
         posenc::check(posenc_rope_config_init(&config, 64));
         const posenc_rope_positions offset{1000, nullptr, POSENC_ROPE_POSITIONS_INT64};
         posenc::check(posenc_rope_qk(ctx, &config, nullptr, &offset, POSENC_ROPE_BTHD, POSENC_F32,
                                      1, tokens, heads, heads, dim, q.data(), q_out.data(),
                                      q.data(), k_out.data()));
         const auto want = reference::rope(ref, q.data());
         return CheckResult{std::max(max_abs_error(q_out.data(), want),
                                     max_abs_error(k_out.data(), want)),
                            1e-5};
       }},
      {"rope interleaved cache @500000",
       [](posenc_context* ctx) {
         const int64_t heads = 2, dim = 128;
         const std::vector<int64_t> ids = {0, 1, 77, 4096, 499999};
         const auto ref = unscaled(POSENC_ROPE_INTERLEAVED, dim, POSENC_ROPE_BHTD, heads, dim, ids);
         const std::vector<float> x = signal(size_t(ids.size() * heads * dim), 0.0f);
         std::vector<float> out(x.size());
         posenc_rope_config config;
         posenc::check(posenc_rope_config_init(&config, dim));
         config.pairing = POSENC_ROPE_INTERLEAVED;
         posenc_rope_cache* cache = nullptr;
         posenc::check(posenc_rope_cache_create(ctx, &config, 500000, &cache));
         const posenc_rope_positions positions{0, ids.data(), POSENC_ROPE_POSITIONS_INT64};
         const posenc_status status =
             posenc_rope(ctx, nullptr, cache, &positions, POSENC_ROPE_BHTD, POSENC_F32, 1,
                         int64_t(ids.size()), heads, dim, x.data(), out.data());
         posenc_rope_cache_destroy(cache);
         posenc::check(status);
         return CheckResult{max_abs_error(out.data(), reference::rope(ref, x.data())), 1e-5};
       }},
  };
}

}  // namespace posenc::cli
