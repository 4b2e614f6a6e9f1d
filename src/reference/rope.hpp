// Reference loops for RoPE (posenc/rope.h), in double.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/rope.h"

namespace posenc::reference {

struct RopeReference {
  posenc_rope_pairing pairing;
  int64_t rotary_dim;
  int64_t grid_width;            // 0: 1D; else 2D, position p = cell (p / W, p % W)
  bool column_first;             // 2D: the first half of the pairs by p % W
  std::vector<double> inv_freq;  // per pair, rotary_dim/2 values
  double attention_factor;
  posenc_rope_layout layout;
  int64_t batch, tokens, heads, head_dim;
  std::vector<int64_t> positions;  // [batch, tokens]
};

// The inverse frequency of every pair (rotary_dim/2; in 2D the second half
// repeats the first) and the attention factor of a config's scaling, from
// the formulas of posenc/rope.h (transformers' modeling_rope_utils) in
// double.
std::vector<double> rope_inverse_frequencies(const posenc_rope_config& c, double* attention_factor);

// The RopeReference of a config's rotation: its pairs, grid and frequencies
// (rope_inverse_frequencies), x's shape and the position of each token.
RopeReference rope_reference(const posenc_rope_config& c, posenc_rope_layout layout,
                             int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim,
                             std::vector<int64_t> positions);

// x rotated, of the same shape and layout as x.
std::vector<double> rope(const RopeReference& r, const float* x);

}  // namespace posenc::reference
