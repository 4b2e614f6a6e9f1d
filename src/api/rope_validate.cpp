#include "api/rope_validate.hpp"

#include <cmath>
#include <string>

#include "api/validate.hpp"

namespace posenc {
namespace {

// The smallest scaling factor s: frequencies w_j / s (w_j <= 2^64, the
// base's bound) times positions below 2^53 stay finite (a subnormal s gave
// infinite frequencies and NaN rows), and so are reduced to finite angles.
constexpr double kMinFactor = 0x1p-64;

// The largest YaRN attention factor: it multiplies cos and sin, so the rows
// stay finite in fp32 and bf16 (1e39 gave infinite rows, NaN outputs).
constexpr double kMaxAttentionFactor = 0x1p64;

void require_scaling_fields(const posenc_rope_config& c) {
  if (c.scaling == POSENC_ROPE_SCALING_NONE) return;
  if (!std::isfinite(c.factor) || !(c.factor >= kMinFactor)) {
    invalid("factor must be finite and >= 2^-64 (got " + real_text(c.factor) + ")");
  }
  if (c.scaling == POSENC_ROPE_SCALING_LINEAR) return;
  require_positive(c.original_max_positions, "original_max_positions");
  const int64_t freq_dim = c.grid_width > 0 ? c.rotary_dim / 2 : c.rotary_dim;
  switch (c.scaling) {
    case POSENC_ROPE_SCALING_DYNAMIC_NTK:
      require_positive(c.sequence_length, "sequence_length");
      if (freq_dim <= 2) {
        invalid("rotary_dim must give a frequency dimension > 2 for DYNAMIC_NTK (got " +
                std::to_string(c.rotary_dim) + ")");
      }
      break;
    case POSENC_ROPE_SCALING_YARN:
      if (!(c.extrapolation_factor >= 0.0 && c.extrapolation_factor <= 1.0)) {
        invalid("extrapolation_factor must be in [0, 1] (got " +
                real_text(c.extrapolation_factor) + ")");
      }
      if (!(c.attention_factor >= 0.0 && c.attention_factor <= kMaxAttentionFactor)) {
        invalid("attention_factor must be in [0, 2^64] (got " +
                real_text(c.attention_factor) + ")");
      }
      require_above(c.beta_slow, 0.0, "beta_slow", "0");
      require_at_least(c.beta_fast, c.beta_slow, "beta_fast",
                       ("beta_slow (" + real_text(c.beta_slow) + ")").c_str());
      require_flag(c.fractional_correction_range, "fractional_correction_range");
      break;
    case POSENC_ROPE_SCALING_LLAMA3:
      require_above(c.low_freq_factor, 0.0, "low_freq_factor", "0");
      require_above(c.high_freq_factor, c.low_freq_factor, "high_freq_factor",
                    "low_freq_factor");
      break;
    default:
      break;
  }
}

template <class Id>
void require_ids_in_range(const Id* ids, int64_t batch, int64_t tokens, int64_t limit,
                          const char* limit_name) {
  for (int64_t i = 0; i < batch * tokens; ++i) {
    if (ids[i] < 0 || int64_t(ids[i]) >= limit) {
      invalid("positions.ids[" + std::to_string(i / tokens) + ", " +
              std::to_string(i % tokens) + "] = " + std::to_string(ids[i]) +
              " is outside [0, " + std::to_string(limit) + ") (" + limit_name + ")");
    }
  }
}

}  // namespace

void require_rope_config(const posenc_rope_config& c) {
  if (c.rotary_dim < 2 || c.rotary_dim % 2 != 0 || c.rotary_dim > POSENC_ROPE_MAX_ROTARY_DIM) {
    invalid("rotary_dim must be even and in [2, " + std::to_string(POSENC_ROPE_MAX_ROTARY_DIM) +
            "] (got " + std::to_string(c.rotary_dim) + ")");
  }
  require_enum(c.pairing, "pairing", {POSENC_ROPE_INTERLEAVED, POSENC_ROPE_HALF_SPLIT});
  require_frequency_base(c.base, "base");
  require_non_negative(c.grid_width, "grid_width");
  require_flag(c.column_first, "column_first");
  if (c.grid_width > 0 && c.rotary_dim % 4 != 0) {
    invalid("rotary_dim must be a multiple of 4 for 2D RoPE (grid_width > 0) (got " +
            std::to_string(c.rotary_dim) + ")");
  }
  require_enum(c.scaling, "scaling",
               {POSENC_ROPE_SCALING_NONE, POSENC_ROPE_SCALING_LINEAR,
                POSENC_ROPE_SCALING_DYNAMIC_NTK, POSENC_ROPE_SCALING_YARN,
                POSENC_ROPE_SCALING_LLAMA3});
  require_scaling_fields(c);
}

void require_rope_positions(const posenc_rope_positions* positions, int64_t batch,
                            int64_t tokens, int64_t limit, const char* limit_name) {
  const posenc_rope_positions p = positions ? *positions : posenc_rope_positions{0, nullptr, {}};
  if (p.ids == nullptr) {
    if (p.offset < 0 || p.offset > limit - tokens) {
      invalid("positions: offset + tokens (" + std::to_string(p.offset) + " + " +
              std::to_string(tokens) + ") must be in [0, " + std::to_string(limit) + "] (" +
              limit_name + ")");
    }
    return;
  }
  if (p.offset != 0) invalid("positions.offset must be 0 when positions.ids is set");
  require_enum(p.ids_type, "positions.ids_type",
               {POSENC_ROPE_POSITIONS_INT32, POSENC_ROPE_POSITIONS_INT64});
  if (p.ids_type == POSENC_ROPE_POSITIONS_INT32) {
    require_ids_in_range(static_cast<const int32_t*>(p.ids), batch, tokens, limit, limit_name);
  } else {
    require_ids_in_range(static_cast<const int64_t*>(p.ids), batch, tokens, limit, limit_name);
  }
}

int64_t rope_ids_bytes(const posenc_rope_positions* positions, int64_t batch, int64_t tokens) {
  if (positions == nullptr || positions->ids == nullptr) return 0;
  require_enum(positions->ids_type, "positions.ids_type",
               {POSENC_ROPE_POSITIONS_INT32, POSENC_ROPE_POSITIONS_INT64});
  const size_t bytes = positions->ids_type == POSENC_ROPE_POSITIONS_INT32 ? 4 : 8;
  require_tensor(positions->ids, bytes, "positions.ids");
  return checked_bytes({batch, tokens}, bytes, "positions.ids");
}

}  // namespace posenc
