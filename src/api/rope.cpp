// C ABI: rotary position embeddings. Validation here (and in
// api/rope_validate.cpp); the work in ops/rope/.
#include <memory>
#include <string>

#include "api/guard.hpp"
#include "api/rope_validate.hpp"
#include "api/validate.hpp"
#include "ops/rope/apply.hpp"
#include "ops/rope/cache.hpp"
#include "posenc/rope.h"
#include "runtime/dtype.hpp"

using namespace posenc;

namespace {

// One tensor of a call, with the names its messages use.
struct Operand {
  const char* in_name;
  const char* out_name;
  const char* heads_name;
  int64_t heads;
  const void* in;
  void* out;
};

void rope_call(posenc_context* context, const posenc_rope_config* config,
               const posenc_rope_cache* cache, const posenc_rope_positions* positions,
               const posenc_rope_layout& layout, const posenc_dtype& dtype, int64_t batch,
               int64_t tokens, int64_t head_dim, const Operand* operands, int count) {
  if (config == nullptr && cache == nullptr) {
    fail(POSENC_ERROR_NULL_POINTER, "config and cache are both NULL; pass one");
  }
  if (config != nullptr && cache != nullptr) {
    invalid("config and cache are both set; pass one (the cache holds its angles)");
  }
  if (config != nullptr) require_rope_config(*config);
  const posenc_rope_config& c = cache ? cache->angles.config : *config;
  require_enum(layout, "layout", {POSENC_ROPE_BTHD, POSENC_ROPE_BHTD});
  require_dtype(dtype, "dtype");
  require_non_negative(batch, "batch");
  require_non_negative(tokens, "tokens");
  require_positive(head_dim, "head_dim");
  if (c.rotary_dim > head_dim) {
    invalid("rotary_dim (" + std::to_string(c.rotary_dim) + ") must be <= head_dim (" +
            std::to_string(head_dim) + ")");
  }
  for (int i = 0; i < count; ++i) require_non_negative(operands[i].heads, operands[i].heads_name);
  int64_t bytes[2];
  for (int i = 0; i < count; ++i) {
    const Operand& o = operands[i];
    bytes[i] = checked_bytes({batch, tokens, o.heads, head_dim}, dtype_bytes(dtype),
                             o.in_name);
    require_tensor_or_empty(o.in, dtype_bytes(dtype), bytes[i], o.in_name);
    require_tensor_or_empty(o.out, dtype_bytes(dtype), bytes[i], o.out_name);
  }
  const int64_t ids_bytes = rope_ids_bytes(positions, batch, tokens);
  for (int i = 0; i < count; ++i) {
    const Operand& o = operands[i];
    require_same_or_disjoint(o.out, bytes[i], o.out_name, o.in, bytes[i], o.in_name);
    if (ids_bytes > 0) {
      require_disjoint(o.out, bytes[i], o.out_name, positions->ids, ids_bytes, "positions.ids");
    }
    for (int j = 0; j < count; ++j) {
      if (j == i) continue;
      const Operand& other = operands[j];
      require_disjoint(o.out, bytes[i], o.out_name, other.in, bytes[j], other.in_name);
      require_disjoint(o.out, bytes[i], o.out_name, other.out, bytes[j], other.out_name);
    }
  }
  if (cache != nullptr) {
    require_rope_positions(positions, batch, tokens, cache->max_positions,
                           "the cache's max_positions");
  } else {
    require_rope_positions(positions, batch, tokens, kMaxExactPosition, "2^53 without a cache");
  }
  // Operands without elements (q or k of no heads) are left out.
  ops::RopeTensor tensors[2];
  int rotated = 0;
  for (int i = 0; i < count; ++i) {
    if (bytes[i] > 0) tensors[rotated++] = {operands[i].heads, operands[i].in, operands[i].out};
  }
  if (rotated == 0) return;

  const ExecContext ctx = resolve_context(context);
  const ops::RopeProblem problem{layout, dtype, batch, tokens, head_dim,
                                 positions ? *positions : posenc_rope_positions{0, nullptr, {}}};
  if (cache != nullptr) {
    ops::rope_apply(ctx, cache->angles, cache, problem, tensors, rotated);
  } else {
    ops::rope_apply(ctx, ops::thread_rope_angles(c), nullptr, problem, tensors, rotated);
  }
}

posenc_rope_config default_config(int64_t rotary_dim) {
  posenc_rope_config config{};
  config.rotary_dim = rotary_dim;
  config.pairing = POSENC_ROPE_HALF_SPLIT;
  config.base = 10000.0;
  config.scaling = POSENC_ROPE_SCALING_NONE;
  config.factor = 1.0;
  config.extrapolation_factor = 1.0;
  config.beta_fast = 32.0;
  config.beta_slow = 1.0;
  config.low_freq_factor = 1.0;
  config.high_freq_factor = 4.0;
  return config;
}

}  // namespace

extern "C" {

posenc_status posenc_rope_config_init(posenc_rope_config* config, int64_t rotary_dim) {
  return guard("posenc_rope_config_init", [&] {
    require_not_null(config, "config");
    *config = default_config(rotary_dim);
  });
}

posenc_status posenc_rope_inverse_frequencies(const posenc_rope_config* config, double* inv_freq,
                                              double* attention_factor) {
  return guard("posenc_rope_inverse_frequencies", [&] {
    require_not_null(config, "config");
    require_rope_config(*config);
    require_tensor(inv_freq, sizeof(double), "inv_freq");
    const ops::RopeAngles angles = ops::rope_angles(*config);
    if (attention_factor != nullptr) {
      require_tensor(attention_factor, sizeof(double), "attention_factor");
      require_disjoint(attention_factor, int64_t(sizeof(double)), "attention_factor", inv_freq,
                       angles.pairs() * int64_t(sizeof(double)), "inv_freq");
    }
    const size_t axis = angles.axis_inv_freq.size();
    for (int64_t j = 0; j < angles.pairs(); ++j) {
      inv_freq[j] = angles.axis_inv_freq[size_t(j) % axis];  // 2D: both halves alike
    }
    if (attention_factor != nullptr) *attention_factor = angles.attention_factor;
  });
}

posenc_status posenc_rope_cache_create(posenc_context* context, const posenc_rope_config* config,
                                       int64_t max_positions, posenc_rope_cache** cache) {
  return guard("posenc_rope_cache_create", [&] {
    require_not_null(cache, "cache");
    require_not_null(config, "config");
    require_rope_config(*config);
    require_positive(max_positions, "max_positions");
    auto created = std::make_unique<posenc_rope_cache>();
    created->angles = ops::rope_angles(*config);
    created->max_positions = max_positions;
    checked_bytes({max_positions, created->angles.row_floats()}, sizeof(float), "max_positions");
    ops::build_rope_cache(resolve_context(context), *created);
    *cache = created.release();
  });
}

posenc_status posenc_rope_cache_create_from_tables(posenc_context* context, int64_t rotary_dim,
                                                   posenc_rope_pairing pairing,
                                                   int64_t max_positions, const float* cos,
                                                   const float* sin, posenc_rope_cache** cache) {
  return guard("posenc_rope_cache_create_from_tables", [&] {
    require_not_null(cache, "cache");
    require_enum(pairing, "pairing", {POSENC_ROPE_INTERLEAVED, POSENC_ROPE_HALF_SPLIT});
    posenc_rope_config config = default_config(rotary_dim);
    config.pairing = pairing;
    require_rope_config(config);  // rotary_dim
    require_positive(max_positions, "max_positions");
    require_tensor(cos, sizeof(float), "cos");
    require_tensor(sin, sizeof(float), "sin");
    auto created = std::make_unique<posenc_rope_cache>();
    created->angles = ops::RopeAngles{config, {}, 1.0};
    created->max_positions = max_positions;
    created->from_tables = true;
    // (The rows hold more floats than the tables: this bounds both.)
    checked_bytes({max_positions, created->angles.row_floats()}, sizeof(float), "max_positions");
    ops::build_rope_cache_from_tables(resolve_context(context), *created, cos, sin);
    *cache = created.release();
  });
}

posenc_status posenc_rope_cache_tables(const posenc_rope_cache* cache, float* cos, float* sin) {
  return guard("posenc_rope_cache_tables", [&] {
    require_not_null(cache, "cache");
    require_tensor(cos, sizeof(float), "cos");
    require_tensor(sin, sizeof(float), "sin");
    const int64_t bytes = checked_bytes({cache->max_positions, cache->angles.pairs()},
                                        sizeof(float), "the cache's tables");
    require_disjoint(sin, bytes, "sin", cos, bytes, "cos");
    ops::read_rope_cache_tables(*cache, cos, sin);
  });
}

void posenc_rope_cache_destroy(posenc_rope_cache* cache) { delete cache; }

int64_t posenc_rope_cache_max_positions(const posenc_rope_cache* cache) {
  return cache ? cache->max_positions : 0;
}

int64_t posenc_rope_cache_rotary_dim(const posenc_rope_cache* cache) {
  return cache ? cache->angles.config.rotary_dim : 0;
}

posenc_status posenc_rope_cache_config(const posenc_rope_cache* cache, posenc_rope_config* config) {
  return guard("posenc_rope_cache_config", [&] {
    require_not_null(cache, "cache");
    require_not_null(config, "config");
    if (cache->from_tables) {
      invalid("cache: made from tables (posenc_rope_cache_create_from_tables), it has no config");
    }
    *config = cache->angles.config;
  });
}

posenc_status posenc_rope(posenc_context* context, const posenc_rope_config* config,
                          const posenc_rope_cache* cache, const posenc_rope_positions* positions,
                          posenc_rope_layout layout, posenc_dtype dtype, int64_t batch,
                          int64_t tokens, int64_t heads, int64_t head_dim, const void* x,
                          void* out) {
  return guard("posenc_rope", [&] {
    const Operand operand{"x", "out", "heads", heads, x, out};
    rope_call(context, config, cache, positions, layout, dtype, batch, tokens, head_dim,
              &operand, 1);
  });
}

posenc_status posenc_rope_qk(posenc_context* context, const posenc_rope_config* config,
                             const posenc_rope_cache* cache,
                             const posenc_rope_positions* positions, posenc_rope_layout layout,
                             posenc_dtype dtype, int64_t batch, int64_t tokens, int64_t q_heads,
                             int64_t k_heads, int64_t head_dim, const void* q, void* q_out,
                             const void* k, void* k_out) {
  return guard("posenc_rope_qk", [&] {
    const Operand operands[2] = {{"q", "q_out", "q_heads", q_heads, q, q_out},
                                 {"k", "k_out", "k_heads", k_heads, k, k_out}};
    rope_call(context, config, cache, positions, layout, dtype, batch, tokens, head_dim,
              operands, 2);
  });
}

}  // extern "C"
