// The posenc/bias.h desc of a posenc_attention desc whose bias is one of
// the kinds without q: the attention's window (map_height x map_width) and
// fields, queries starting at query_offset. Header-only: the validation,
// the reference and the cases' unfused way all describe the bias with it.
#pragma once

#include <cstdint>

#include "posenc/attention.h"
#include "posenc/bias.h"

namespace posenc::ops {

inline posenc_position_bias_desc position_bias_desc_of(const posenc_attention_desc& d,
                                                       int64_t query_offset) {
  posenc_position_bias_desc p{};
  p.kind = d.bias == POSENC_BIAS_TABLE_2D   ? POSENC_POSITION_BIAS_TABLE_2D
           : d.bias == POSENC_BIAS_TABLE_1D ? POSENC_POSITION_BIAS_TABLE_1D
           : d.bias == POSENC_BIAS_T5       ? POSENC_POSITION_BIAS_T5
                                            : POSENC_POSITION_BIAS_ALIBI;
  p.heads = d.heads;
  p.q_len = d.q_len;
  p.kv_len = d.kv_len;
  p.query_offset = query_offset;
  p.window_height = d.map_height;
  p.window_width = d.map_width;
  p.class_token = d.class_token;
  p.max_distance = d.max_distance;
  p.num_buckets = d.num_buckets;
  p.bidirectional = d.bidirectional;
  return p;
}

}  // namespace posenc::ops
