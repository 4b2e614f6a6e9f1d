// C ABI: absolute encodings. Validation here; the work in ops/absolute/encodings.cpp
// and, for resizing a learned table, ops/resize/tables.cpp.
#include <cmath>

#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/absolute/encodings.hpp"
#include "ops/resize/tables.hpp"
#include "posenc/absolute.h"
#include "runtime/dtype.hpp"

using namespace posenc;

namespace {

void require_sinusoid(double base, const posenc_sincos_layout& layout) {
  require_frequency_base(base, "base");
  require_enum(layout, "layout", {POSENC_SINCOS_INTERLEAVED, POSENC_SINCOS_SPLIT});
}

// The last position written must stay exactly representable in double.
void require_positions(int64_t offset, int64_t count, const char* offset_name,
                       const char* count_name) {
  if (count > kMaxExactPosition) {
    invalid(std::string(count_name) + " must be <= 2^53 (got " + std::to_string(count) + ")");
  }
  require_non_negative(offset, offset_name);
  if (offset > kMaxExactPosition - count) {
    invalid(std::string(offset_name) + " + the number of positions must be <= 2^53");
  }
}

// A resize's scale along one axis: 0 (the sizes give it) or torch's
// scale_factor, which must give the new size as interpolate computes it.
void require_resize_scale(double scale, int64_t size, int64_t new_size, const char* name,
                          const char* size_name, const char* new_size_name) {
  require_finite(scale, name);
  if (scale < 0) {
    invalid(std::string(name) + " must be 0 or positive (got " + real_text(scale) + ")");
  }
  if (scale > 0 && std::floor(double(size) * scale) != double(new_size)) {
    invalid(std::string(name) + " must give " + new_size_name + " = floor(" + size_name + " * " +
            name + ") (got " + std::to_string(new_size) + " for " + std::to_string(size) +
            " * " + real_text(scale) + ")");
  }
}

// The bytes of a table of `prefix` rows and a height x width grid, rows of
// dim floats (a grid without cells must still have sides whose bytes fit).
int64_t grid_table_bytes(int64_t prefix, int64_t height, int64_t width, int64_t dim,
                         const char* what) {
  return checked_sum(checked_bytes({prefix, dim}, sizeof(float), what),
                     checked_bytes({height, width, dim}, sizeof(float), what), what);
}

}  // namespace

extern "C" {

void posenc_absolute_resize_desc_init(posenc_absolute_resize_desc* desc, int64_t dim,
                                      int64_t height, int64_t width, int64_t new_height,
                                      int64_t new_width) {
  if (desc == nullptr) return;
  *desc = posenc_absolute_resize_desc{};
  desc->dim = dim;
  desc->prefix_tokens = 1;
  desc->height = height;
  desc->width = width;
  desc->new_height = new_height;
  desc->new_width = new_width;
  desc->interpolation = POSENC_INTERPOLATION_BICUBIC;
  desc->antialias = 1;
}

posenc_status posenc_resize_absolute_table_2d(posenc_context* context,
                                              const posenc_absolute_resize_desc* desc,
                                              const float* in, float* out) {
  return guard("posenc_resize_absolute_table_2d", [&] {
    require_not_null(desc, "desc");
    const posenc_absolute_resize_desc d = *desc;
    require_positive(d.dim, "desc->dim");
    require_non_negative(d.prefix_tokens, "desc->prefix_tokens");
    require_positive(d.height, "desc->height");
    require_positive(d.width, "desc->width");
    require_non_negative(d.new_height, "desc->new_height");
    require_non_negative(d.new_width, "desc->new_width");
    require_enum(d.interpolation, "desc->interpolation",
                 {POSENC_INTERPOLATION_BICUBIC, POSENC_INTERPOLATION_BILINEAR});
    require_flag(d.antialias, "desc->antialias");
    require_resize_scale(d.height_scale, d.height, d.new_height, "desc->height_scale",
                         "desc->height", "desc->new_height");
    require_resize_scale(d.width_scale, d.width, d.new_width, "desc->width_scale",
                         "desc->width", "desc->new_width");
    const int64_t in_bytes = grid_table_bytes(d.prefix_tokens, d.height, d.width, d.dim, "in");
    const int64_t out_bytes =
        grid_table_bytes(d.prefix_tokens, d.new_height, d.new_width, d.dim, "out");
    require_tensor(in, sizeof(float), "in");
    require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
    require_disjoint(out, out_bytes, "out", in, in_bytes, "in");
    if (out_bytes == 0) return;
    ops::resize_absolute_table_2d(resolve_context(context), d, in, out);
  });
}

posenc_status posenc_sinusoid_table(posenc_context* context, int64_t length, int64_t dim,
                                    int64_t start, double base, posenc_sincos_layout layout,
                                    posenc_dtype out_dtype, void* out) {
  return guard("posenc_sinusoid_table", [&] {
    require_non_negative(length, "length");
    require_positive(dim, "dim");
    require_positions(start, length, "start", "length");
    require_sinusoid(base, layout);
    require_dtype(out_dtype, "out_dtype");
    const int64_t bytes = checked_bytes({length, dim}, dtype_bytes(out_dtype), "out");
    require_tensor_or_empty(out, dtype_bytes(out_dtype), bytes, "out");
    if (bytes == 0) return;
    ops::sinusoid_table(resolve_context(context), length, dim, start, base, layout, out_dtype,
                        out);
  });
}

posenc_status posenc_sinusoid_table_2d(posenc_context* context, int64_t height, int64_t width,
                                       int64_t dim, double base, posenc_sincos_layout layout,
                                       posenc_dtype out_dtype, void* out) {
  return guard("posenc_sinusoid_table_2d", [&] {
    require_non_negative(height, "height");
    require_non_negative(width, "width");
    require_positive(dim, "dim");
    if (dim % 2 != 0) {
      invalid("dim must be even, half for rows and half for columns (got " +
              std::to_string(dim) + ")");
    }
    require_sinusoid(base, layout);
    require_dtype(out_dtype, "out_dtype");
    const int64_t bytes = checked_bytes({height, width, dim}, dtype_bytes(out_dtype), "out");
    require_tensor_or_empty(out, dtype_bytes(out_dtype), bytes, "out");
    if (bytes == 0) return;
    ops::sinusoid_table_2d(resolve_context(context), height, width, dim, base, layout,
                           out_dtype, out);
  });
}

posenc_status posenc_add_sinusoid(posenc_context* context, int64_t batch, int64_t tokens,
                                  int64_t dim, int64_t offset, double base,
                                  posenc_sincos_layout layout, const float* x, float* out) {
  return guard("posenc_add_sinusoid", [&] {
    require_non_negative(batch, "batch");
    require_non_negative(tokens, "tokens");
    require_positive(dim, "dim");
    require_positions(offset, tokens, "offset", "tokens");
    require_sinusoid(base, layout);
    const int64_t bytes = checked_bytes({batch, tokens, dim}, sizeof(float), "x");
    require_tensor_or_empty(x, sizeof(float), bytes, "x");
    require_tensor_or_empty(out, sizeof(float), bytes, "out");
    require_same_or_disjoint(out, bytes, "out", x, bytes, "x");
    if (bytes == 0) return;
    ops::add_sinusoid(resolve_context(context), batch, tokens, dim, offset, base, layout, x,
                      out);
  });
}

posenc_status posenc_add_learned(posenc_context* context, int64_t batch, int64_t tokens,
                                 int64_t dim, int64_t offset, const float* table,
                                 int64_t table_rows, const float* x, float* out) {
  return guard("posenc_add_learned", [&] {
    require_non_negative(batch, "batch");
    require_non_negative(tokens, "tokens");
    require_positive(dim, "dim");
    require_non_negative(offset, "offset");
    require_non_negative(table_rows, "table_rows");
    if (tokens > table_rows) {
      fail(POSENC_ERROR_SHAPE_MISMATCH, "tokens (" + std::to_string(tokens) +
                                            ") exceeds table_rows (" +
                                            std::to_string(table_rows) + ")");
    }
    if (offset > table_rows - tokens) {
      fail(POSENC_ERROR_SHAPE_MISMATCH, "offset + tokens (" + std::to_string(offset) + " + " +
                                            std::to_string(tokens) + ") exceeds table_rows (" +
                                            std::to_string(table_rows) + ")");
    }
    const int64_t table_bytes = checked_bytes({table_rows, dim}, sizeof(float), "table");
    require_tensor_or_empty(table, sizeof(float), table_bytes, "table");
    const int64_t bytes = checked_bytes({batch, tokens, dim}, sizeof(float), "x");
    require_tensor_or_empty(x, sizeof(float), bytes, "x");
    require_tensor_or_empty(out, sizeof(float), bytes, "out");
    require_same_or_disjoint(out, bytes, "out", x, bytes, "x");
    require_disjoint(out, bytes, "out", table, table_bytes, "table");
    if (bytes == 0) return;
    ops::add_learned(resolve_context(context), batch, tokens, dim, offset, table, x, out);
  });
}

posenc_status posenc_concat_sinusoid(posenc_context* context, int64_t batch, int64_t tokens,
                                     int64_t x_dim, int64_t pos_dim, int64_t offset,
                                     double base, posenc_sincos_layout layout, const float* x,
                                     float* out) {
  return guard("posenc_concat_sinusoid", [&] {
    require_non_negative(batch, "batch");
    require_non_negative(tokens, "tokens");
    require_positive(x_dim, "x_dim");
    require_positive(pos_dim, "pos_dim");
    require_positions(offset, tokens, "offset", "tokens");
    require_sinusoid(base, layout);
    const int64_t out_dim = checked_sum(x_dim, pos_dim, "x_dim + pos_dim");
    const int64_t x_bytes = checked_bytes({batch, tokens, x_dim}, sizeof(float), "x");
    const int64_t out_bytes = checked_bytes({batch, tokens, out_dim}, sizeof(float), "out");
    require_tensor_or_empty(x, sizeof(float), x_bytes, "x");
    require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
    require_disjoint(out, out_bytes, "out", x, x_bytes, "x");
    if (out_bytes == 0) return;
    ops::concat_sinusoid(resolve_context(context), batch, tokens, x_dim, pos_dim, offset, base,
                         layout, x, out);
  });
}

}  // extern "C"
