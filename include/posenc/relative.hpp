// C++ wrappers of posenc/relative.h; shapes, layouts and errors as documented
// there. Every function throws posenc::Error on bad input.
#pragma once

#include <cstdint>

#include "posenc/core.hpp"
#include "posenc/relative.h"

namespace posenc {

// Options of the 1D relative logits (posenc_relative_options).
struct RelativeOptions {
  int64_t query_offset = 0;
  int64_t clip = 0;  // 0: no clipping
  bool causal = false;
};

inline void absolute_logits(const Context& context, int64_t batch, int64_t heads,
                            int64_t queries, int64_t keys, int64_t dim, const float* q,
                            const float* table, int64_t table_heads, float* out) {
  check(posenc_absolute_logits(context.get(), batch, heads, queries, keys, dim, q, table,
                               table_heads, out));
}

inline void rel_to_abs(const Context& context, int64_t batch, int64_t heads, int64_t length,
                       const float* in, float* out) {
  check(posenc_rel_to_abs(context.get(), batch, heads, length, in, out));
}

inline void relative_logits_1d(const Context& context, int64_t batch, int64_t heads,
                               int64_t queries, int64_t keys, int64_t dim, const float* q,
                               const float* table, int64_t table_heads, float* out,
                               RelativeOptions options = {}) {
  const posenc_relative_options o{options.query_offset, options.clip, options.causal ? 1 : 0};
  check(posenc_relative_logits_1d(context.get(), batch, heads, queries, keys, dim, q, table,
                                  table_heads, &o, out));
}

inline void relative_logits_2d_decomposed(const Context& context, int64_t batch,
                                          int64_t heads, int64_t height, int64_t width,
                                          int64_t dim, const float* q, const float* row_table,
                                          const float* column_table, int64_t table_heads,
                                          float* rel_h, float* rel_w) {
  check(posenc_relative_logits_2d_decomposed(context.get(), batch, heads, height, width, dim,
                                             q, row_table, column_table, table_heads, rel_h,
                                             rel_w));
}

inline void relative_logits_2d(const Context& context, int64_t batch, int64_t heads,
                               int64_t height, int64_t width, int64_t dim, const float* q,
                               const float* row_table, const float* column_table,
                               int64_t table_heads, float* out) {
  check(posenc_relative_logits_2d(context.get(), batch, heads, height, width, dim, q,
                                  row_table, column_table, table_heads, out));
}

// A desc of these sizes with the defaults of posenc_relative_2d_desc_init
// (the query map as key map, KEY_MINUS_QUERY, shared tables); set the other
// fields on the result.
inline posenc_relative_2d_desc relative_2d_desc(int64_t batch, int64_t heads, int64_t map_height,
                                                int64_t map_width, int64_t dim) {
  posenc_relative_2d_desc desc;
  posenc_relative_2d_desc_init(&desc, batch, heads, map_height, map_width, dim);
  return desc;
}

inline void relative_logits_2d_maps(const Context& context, const posenc_relative_2d_desc& desc,
                                    const float* q, const float* row_table,
                                    const float* column_table, float* rel_h, float* rel_w) {
  check(posenc_relative_logits_2d_maps(context.get(), &desc, q, row_table, column_table, rel_h,
                                       rel_w));
}

}  // namespace posenc
