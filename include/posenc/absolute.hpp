// C++ wrappers of posenc/absolute.h; shapes, layouts and errors as documented
// there. Every function throws posenc::Error on bad input.
#pragma once

#include <cstdint>

#include "posenc/absolute.h"
#include "posenc/core.hpp"

namespace posenc {

enum class SinCosLayout {
  interleaved = POSENC_SINCOS_INTERLEAVED,
  split = POSENC_SINCOS_SPLIT,
};

struct Sinusoid {
  double base = 10000.0;
  SinCosLayout layout = SinCosLayout::interleaved;
};

inline void sinusoid_table(const Context& context, int64_t length, int64_t dim, float* out,
                           int64_t start = 0, Sinusoid s = {}) {
  check(posenc_sinusoid_table(
      context.get(), length, dim, start, s.base,
      detail::c_enum<posenc_sincos_layout>(s.layout, "posenc::sinusoid_table: layout"), POSENC_F32,
      out));
}

// bf16 output as uint16_t bit patterns.
inline void sinusoid_table_bf16(const Context& context, int64_t length, int64_t dim,
                                uint16_t* out, int64_t start = 0, Sinusoid s = {}) {
  check(posenc_sinusoid_table(
      context.get(), length, dim, start, s.base,
      detail::c_enum<posenc_sincos_layout>(s.layout, "posenc::sinusoid_table_bf16: layout"),
      POSENC_BF16, out));
}

inline void sinusoid_table_2d(const Context& context, int64_t height, int64_t width,
                              int64_t dim, float* out, Sinusoid s = {}) {
  check(posenc_sinusoid_table_2d(
      context.get(), height, width, dim, s.base,
      detail::c_enum<posenc_sincos_layout>(s.layout, "posenc::sinusoid_table_2d: layout"),
      POSENC_F32, out));
}

// bf16 output as uint16_t bit patterns.
inline void sinusoid_table_2d_bf16(const Context& context, int64_t height, int64_t width,
                                   int64_t dim, uint16_t* out, Sinusoid s = {}) {
  check(posenc_sinusoid_table_2d(
      context.get(), height, width, dim, s.base,
      detail::c_enum<posenc_sincos_layout>(s.layout, "posenc::sinusoid_table_2d_bf16: layout"),
      POSENC_BF16, out));
}

inline void add_sinusoid(const Context& context, int64_t batch, int64_t tokens, int64_t dim,
                         const float* x, float* out, int64_t offset = 0, Sinusoid s = {}) {
  check(posenc_add_sinusoid(
      context.get(), batch, tokens, dim, offset, s.base,
      detail::c_enum<posenc_sincos_layout>(s.layout, "posenc::add_sinusoid: layout"), x, out));
}

inline void add_learned(const Context& context, int64_t batch, int64_t tokens, int64_t dim,
                        const float* table, int64_t table_rows, const float* x, float* out,
                        int64_t offset = 0) {
  check(posenc_add_learned(context.get(), batch, tokens, dim, offset, table, table_rows, x,
                           out));
}

inline void concat_sinusoid(const Context& context, int64_t batch, int64_t tokens,
                            int64_t x_dim, int64_t pos_dim, const float* x, float* out,
                            int64_t offset = 0, Sinusoid s = {}) {
  check(posenc_concat_sinusoid(
      context.get(), batch, tokens, x_dim, pos_dim, offset, s.base,
      detail::c_enum<posenc_sincos_layout>(s.layout, "posenc::concat_sinusoid: layout"), x, out));
}

// A desc of the sizes with timm's defaults (posenc_absolute_resize_desc_init:
// one prefix token, bicubic, antialiased); set other fields directly.
inline posenc_absolute_resize_desc absolute_resize_desc(int64_t dim, int64_t height,
                                                        int64_t width, int64_t new_height,
                                                        int64_t new_width) {
  posenc_absolute_resize_desc desc;
  posenc_absolute_resize_desc_init(&desc, dim, height, width, new_height, new_width);
  return desc;
}

// in [prefix_tokens + height*width, dim] to out [prefix_tokens +
// new_height*new_width, dim].
inline void resize_absolute_table_2d(const Context& context,
                                     const posenc_absolute_resize_desc& desc, const float* in,
                                     float* out) {
  check(posenc_resize_absolute_table_2d(context.get(), &desc, in, out));
}

}  // namespace posenc
