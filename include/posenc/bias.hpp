// C++ wrappers of posenc/bias.h; shapes, layouts and errors as documented
// there. Every function throws posenc::Error on bad input.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/bias.h"
#include "posenc/core.hpp"

namespace posenc {

// A desc of the kind and sizes (see posenc_position_bias_desc_init); set the
// kind's other fields directly.
inline posenc_position_bias_desc position_bias_desc(posenc_position_bias_kind kind,
                                                    int64_t heads, int64_t q_len,
                                                    int64_t kv_len) {
  posenc_position_bias_desc desc;
  posenc_position_bias_desc_init(&desc, kind, heads, q_len, kv_len);
  return desc;
}

// out [heads, q_len, kv_len]; table as the kind takes it (ALiBi: slopes or nullptr).
inline void position_bias(const Context& context, const posenc_position_bias_desc& desc,
                          const float* table, float* out) {
  check(posenc_position_bias(context.get(), &desc, table, out));
}

inline std::vector<float> alibi_slopes(int64_t heads) {
  std::vector<float> slopes;
  if (heads > 0) detail::allocate(slopes, uint64_t(heads), "posenc::alibi_slopes: slopes");
  check(posenc_alibi_slopes(heads, slopes.data()));
  return slopes;
}

inline void resize_relative_table(int64_t rows, int64_t dim, const float* in, int64_t new_rows,
                                  float* out) {
  check(posenc_resize_relative_table(rows, dim, in, new_rows, out));
}

inline void resize_relative_bias_table_2d(int64_t heads, int64_t window_height,
                                          int64_t window_width, int64_t new_window_height,
                                          int64_t new_window_width, bool class_token,
                                          const float* in, float* out) {
  check(posenc_resize_relative_bias_table_2d(heads, window_height, window_width,
                                             new_window_height, new_window_width,
                                             class_token ? 1 : 0, in, out));
}

}  // namespace posenc
