// The checks of a posenc_position_bias_desc (posenc/bias.h), shared by
// posenc_position_bias and the bias kinds of posenc_attention that need no q
// (which name the window's fields map_height and map_width).
#pragma once

#include <cstdint>

#include "posenc/bias.h"

namespace posenc {

// How the caller's desc names the window's fields in errors.
struct PositionBiasNames {
  const char* window_height;   // "desc->window_height"
  const char* window_width;    // "desc->window_width"
  const char* window_product;  // "desc->window_height * window_width"
  const char* window_tokens;   // window_product + " + desc->class_token"
  const char* table;           // "table"
};

// Checks every field of d (throws naming the first bad one); returns the
// floats of its table (ALiBi: heads, its slopes when the caller gives them).
int64_t validate_position_bias_desc(const posenc_position_bias_desc& d,
                                    const PositionBiasNames& names);

}  // namespace posenc
