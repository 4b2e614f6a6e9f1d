// C++ wrappers of posenc/rope.h; shapes, layouts, scalings and errors as
// documented there. Every function throws posenc::Error on bad input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "posenc/core.hpp"
#include "posenc/rope.h"

namespace posenc {

enum class RopePairing {
  interleaved = POSENC_ROPE_INTERLEAVED,
  half_split = POSENC_ROPE_HALF_SPLIT,
};

enum class RopeLayout {
  bthd = POSENC_ROPE_BTHD,
  bhtd = POSENC_ROPE_BHTD,
};

// posenc_rope_config_init's defaults, with a pairing; set scaling fields on
// the result as needed.
inline posenc_rope_config rope_config(int64_t rotary_dim,
                                      RopePairing pairing = RopePairing::half_split,
                                      double base = 10000.0) {
  posenc_rope_config config;
  check(posenc_rope_config_init(&config, rotary_dim));
  config.pairing = detail::c_enum<posenc_rope_pairing>(pairing, "posenc::rope_config: pairing");
  config.base = base;
  return config;
}

// A config's angles after scaling (posenc_rope_inverse_frequencies): pair
// j's angle at 1D position p is p * inverse_frequencies[j], rotary_dim / 2
// of them (2D: the second half repeats the first); cos and sin are
// multiplied by attention_factor.
struct RopeFrequencies {
  std::vector<double> inverse_frequencies;
  double attention_factor = 1.0;
};
inline RopeFrequencies rope_frequencies(const posenc_rope_config& config) {
  RopeFrequencies f;
  // Room for any valid config; the call refuses the others and writes nothing.
  const int64_t pairs =
      std::max<int64_t>(1, std::min<int64_t>(config.rotary_dim, POSENC_ROPE_MAX_ROTARY_DIM) / 2);
  detail::allocate(f.inverse_frequencies, uint64_t(pairs),
                   "posenc::rope_frequencies: inverse_frequencies");
  check(posenc_rope_inverse_frequencies(&config, f.inverse_frequencies.data(),
                                        &f.attention_factor));
  return f;
}

// A cache's cos and sin, [max_positions, rotary_dim / 2] each, as
// posenc_rope_cache_create_from_tables takes them.
struct RopeTables {
  std::vector<float> cos, sin;
};

// Owns a posenc_rope_cache (immutable, shareable across threads). One moved
// from holds none (calls with it fail).
class RopeCache {
 public:
  RopeCache(const Context& context, const posenc_rope_config& config, int64_t max_positions) {
    check(posenc_rope_cache_create(context.get(), &config, max_positions, &handle_));
  }
  // A cache of the caller's cos and sin [max_positions, rotary_dim / 2]
  // (posenc_rope_cache_create_from_tables); it has no config().
  static RopeCache from_tables(const Context& context, int64_t rotary_dim, RopePairing pairing,
                               int64_t max_positions, const float* cos, const float* sin) {
    RopeCache cache;
    check(posenc_rope_cache_create_from_tables(
        context.get(), rotary_dim,
        detail::c_enum<posenc_rope_pairing>(pairing, "posenc::RopeCache::from_tables: pairing"),
        max_positions, cos, sin, &cache.handle_));
    return cache;
  }
  RopeCache(RopeCache&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  RopeCache& operator=(RopeCache&& other) noexcept {
    if (this != &other) {
      posenc_rope_cache_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  RopeCache(const RopeCache&) = delete;
  RopeCache& operator=(const RopeCache&) = delete;
  ~RopeCache() { posenc_rope_cache_destroy(handle_); }

  int64_t max_positions() const { return posenc_rope_cache_max_positions(handle_); }
  int64_t rotary_dim() const { return posenc_rope_cache_rotary_dim(handle_); }
  // Its angles as tables (posenc_rope_cache_tables).
  RopeTables tables() const {
    RopeTables t;
    const uint64_t count = uint64_t(max_positions()) * uint64_t(rotary_dim() / 2);
    detail::allocate(t.cos, count, "posenc::RopeCache::tables: cos");
    detail::allocate(t.sin, count, "posenc::RopeCache::tables: sin");
    check(posenc_rope_cache_tables(handle_, t.cos.data(), t.sin.data()));
    return t;
  }
  // The config it was built from (a cache of tables has none: throws).
  posenc_rope_config config() const {
    posenc_rope_config config{};
    check(posenc_rope_cache_config(handle_, &config));
    return config;
  }
  const posenc_rope_cache* get() const { return handle_; }

 private:
  RopeCache() = default;

  posenc_rope_cache* handle_ = nullptr;
};

// Where angles come from: a RopeCache object, which must outlive the source
// (so not a temporary one) and is read at each call (a cache assigned to it
// since serves; one moved out of it leaves none, and calls fail), or a
// config (on the fly), kept by value. Implicit, so that either can be
// passed where RopeSource is expected.
class RopeSource {
 public:
  RopeSource(const RopeCache& cache) : cache_(&cache) {}
  RopeSource(RopeCache&&) = delete;
  RopeSource(const RopeCache&&) = delete;
  RopeSource(const posenc_rope_config& config) : config_(config) {}

  const posenc_rope_config* config() const { return cache_ == nullptr ? &config_ : nullptr; }
  const posenc_rope_cache* cache() const { return cache_ != nullptr ? cache_->get() : nullptr; }

 private:
  posenc_rope_config config_{};
  const RopeCache* cache_ = nullptr;
};

// Positions offset + t, or explicit ids [batch, tokens].
inline posenc_rope_positions rope_offset(int64_t offset) {
  return {offset, nullptr, POSENC_ROPE_POSITIONS_INT32};
}
inline posenc_rope_positions rope_ids(const int32_t* ids) {
  return {0, ids, POSENC_ROPE_POSITIONS_INT32};
}
inline posenc_rope_positions rope_ids(const int64_t* ids) {
  return {0, ids, POSENC_ROPE_POSITIONS_INT64};
}

inline posenc_dtype rope_dtype(const float*) { return POSENC_F32; }
inline posenc_dtype rope_dtype(const uint16_t*) { return POSENC_BF16; }  // bf16 bits

// Value: float, or uint16_t for bf16.
template <class Value>
void rope(const Context& context, RopeSource angles, RopeLayout layout, int64_t batch,
          int64_t tokens, int64_t heads, int64_t head_dim, const Value* x, Value* out,
          posenc_rope_positions positions = rope_offset(0)) {
  check(posenc_rope(context.get(), angles.config(), angles.cache(), &positions,
                    detail::c_enum<posenc_rope_layout>(layout, "posenc::rope: layout"),
                    rope_dtype(x), batch, tokens, heads, head_dim, x, out));
}

template <class Value>
void rope_qk(const Context& context, RopeSource angles, RopeLayout layout, int64_t batch,
             int64_t tokens, int64_t q_heads, int64_t k_heads, int64_t head_dim, const Value* q,
             Value* q_out, const Value* k, Value* k_out,
             posenc_rope_positions positions = rope_offset(0)) {
  check(posenc_rope_qk(context.get(), angles.config(), angles.cache(), &positions,
                       detail::c_enum<posenc_rope_layout>(layout, "posenc::rope_qk: layout"),
                       rope_dtype(q), batch, tokens, q_heads, k_heads, head_dim, q, q_out, k,
                       k_out));
}
// k alone (q_heads 0: q and q_out nullptr, as the C call takes them), and q
// alone (k_heads 0).
template <class Value>
void rope_qk(const Context& context, RopeSource angles, RopeLayout layout, int64_t batch,
             int64_t tokens, int64_t q_heads, int64_t k_heads, int64_t head_dim, std::nullptr_t,
             std::nullptr_t, const Value* k, Value* k_out,
             posenc_rope_positions positions = rope_offset(0)) {
  rope_qk(context, angles, layout, batch, tokens, q_heads, k_heads, head_dim,
          static_cast<const Value*>(nullptr), static_cast<Value*>(nullptr), k, k_out, positions);
}
template <class Value>
void rope_qk(const Context& context, RopeSource angles, RopeLayout layout, int64_t batch,
             int64_t tokens, int64_t q_heads, int64_t k_heads, int64_t head_dim, const Value* q,
             Value* q_out, std::nullptr_t, std::nullptr_t,
             posenc_rope_positions positions = rope_offset(0)) {
  rope_qk(context, angles, layout, batch, tokens, q_heads, k_heads, head_dim, q, q_out,
          static_cast<const Value*>(nullptr), static_cast<Value*>(nullptr), positions);
}

}  // namespace posenc
