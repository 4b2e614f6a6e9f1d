// RoPE frequencies in double, per scaling (formulas in posenc/rope.h). The
// config is validated by the caller (api/rope_validate.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/rope.h"

namespace posenc::ops {

// Everything a call needs to make cos/sin rows of one config.
struct RopeAngles {
  posenc_rope_config config;
  // Inverse frequencies of one axis: rotary_dim/2 pairs in 1D, rotary_dim/4
  // in 2D (where both halves of the pairs use them).
  std::vector<double> axis_inv_freq;
  double attention_factor;

  int64_t pairs() const { return config.rotary_dim / 2; }
  // Floats per cos/sin row: [cos | sin] per pair for HALF_SPLIT; for
  // INTERLEAVED each value's cos and signed sin ([c0 c0 c1 c1 ...],
  // [-s0 s0 -s1 s1 ...]) so the rotation needs no shuffle of cos/sin.
  int64_t row_floats() const {
    return config.pairing == POSENC_ROPE_INTERLEAVED ? 2 * config.rotary_dim
                                                     : config.rotary_dim;
  }
};

RopeAngles rope_angles(const posenc_rope_config& config);

// rope_angles(config), kept by the calling thread for its next call with the
// same config (field by field), so that repeated calls allocate nothing.
const RopeAngles& thread_rope_angles(const posenc_rope_config& config);
// Frees the angles the calling thread keeps (posenc_release_thread_memory).
void release_thread_rope_angles();

}  // namespace posenc::ops
