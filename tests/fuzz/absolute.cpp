// Absolute encodings: sinusoid tables (1D, 2D), adding a sinusoid or a learned
// table, concatenating a sinusoid, resizing a learned table of a grid.
#include <cmath>
#include <cstring>

#include "checks.hpp"
#include "families.hpp"

namespace posenc::fuzz {
namespace {

posenc_sincos_layout layout(FuzzInput& in, int& invalid) {
  const int v = in.choice(5);
  if (v > 1) ++invalid;
  return posenc_sincos_layout(v);
}

// A position offset: valid (>= 0, sometimes large) or negative.
int64_t offset(FuzzInput& in, int& invalid) {
  const int64_t value = in.flag() ? int64_t(in.byte()) * 4099 : -1 - int64_t(in.byte());
  if (value < 0) ++invalid;
  return value;
}

}  // namespace

void fuzz_sinusoid_table(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const bool two_d = in.flag();
  const int64_t length = in.count(64, invalid), dim = in.size(64, invalid);
  const int64_t width = two_d ? in.count(16, invalid) : 1;  // 2D: length is the height
  const int64_t start = two_d ? 0 : offset(in, invalid);
  if (two_d && dim % 2 != 0) ++invalid;
  const double base = in.real(10000.0);
  const posenc_sincos_layout lay = layout(in, invalid);
  const bool bf16 = in.flag();
  const posenc_dtype dtype = in.choice(8) == 0 ? posenc_dtype(2) : bf16 ? POSENC_BF16 : POSENC_F32;
  if (dtype > POSENC_BF16) ++invalid;
  std::vector<float> out(elements({length, width, dim}, invalid), kUntouched);
  const bool null_out = in.choice(16) == 0;
  void* out_ptr = null_out ? nullptr : out.data();
  const posenc_status status =
      two_d ? posenc_sinusoid_table_2d(context.get(), length, width, dim, base, lay, dtype, out_ptr)
            : posenc_sinusoid_table(context.get(), length, dim, start, base, lay, dtype, out_ptr);
  expect_outcome(status, invalid + in.invalid_reals() > 0 || (null_out && !out.empty()), out);
}

void fuzz_add(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(8, invalid), tokens = in.count(32, invalid),
                dim = in.size(48, invalid);
  const int64_t first = offset(in, invalid) % 1000;
  const size_t n = elements({batch, tokens, dim}, invalid);
  std::vector<float> x(n, 0.5f), out(n, kUntouched);
  const int pointers = in.choice(8);  // 0: x NULL, 1: out NULL, 2: in place, 3: overlap
  const bool in_place = pointers == 2;
  float* out_ptr = pointers == 1 ? nullptr : in_place ? x.data() : out.data();
  const float* x_ptr = pointers == 0 ? nullptr : x.data();
  std::vector<float> overlapping(n + 1, kUntouched);
  if (pointers == 3) {
    x_ptr = overlapping.data();
    out_ptr = overlapping.data() + 1;
  }
  // x and out shifted by one element overlap when they hold more than one;
  // NULL is allowed for an empty tensor.
  const bool bad_pointers = (pointers <= 1 && n > 0) || (pointers == 3 && n > 1);
  posenc_status status;
  if (in.flag()) {
    const double base = in.real(10000.0);
    const posenc_sincos_layout lay = layout(in, invalid);
    status = posenc_add_sinusoid(context.get(), batch, tokens, dim, first, base, lay, x_ptr,
                                 out_ptr);
  } else {
    int table_invalid = 0;
    const int64_t rows = in.count(64, table_invalid);
    const bool too_short = table_invalid == 0 && invalid == 0 && first + tokens > rows;
    std::vector<float> table(elements({rows, dim}, table_invalid + invalid), 0.25f);
    invalid += table_invalid + (too_short ? 1 : 0);
    status = posenc_add_learned(context.get(), batch, tokens, dim, first, table.data(), rows,
                                x_ptr, out_ptr);
  }
  const bool must_fail = invalid + in.invalid_reals() > 0 || bad_pointers;
  if (in_place) {
    expect_outcome(status, must_fail, x, 0.5f);
  } else {
    expect_outcome(status, must_fail, pointers == 3 ? overlapping : out);
  }
}

void fuzz_concat(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(4, invalid), tokens = in.count(24, invalid),
                x_dim = in.size(24, invalid), pos_dim = in.size(24, invalid);
  const int64_t first = offset(in, invalid);
  const double base = in.real(10000.0);
  const posenc_sincos_layout lay = layout(in, invalid);
  std::vector<float> x(elements({batch, tokens, x_dim}, invalid), 0.5f);
  const int64_t out_dim = invalid > 0 ? 1 : x_dim + pos_dim;
  std::vector<float> out(elements({batch, tokens, out_dim}, invalid), kUntouched);
  const int pointers = in.choice(8);  // 0: x NULL, 1: out NULL, 2: out == x
  const float* x_ptr = pointers == 0 ? nullptr : pointers == 2 ? out.data() : x.data();
  const posenc_status status =
      posenc_concat_sinusoid(context.get(), batch, tokens, x_dim, pos_dim, first, base, lay,
                             x_ptr, pointers == 1 ? nullptr : out.data());
  // With no tokens, NULL tensors and out == x (empty ranges) are allowed.
  const bool bad_pointers = pointers <= 2 && invalid == 0 && batch * tokens > 0;
  expect_outcome(status, invalid + in.invalid_reals() > 0 || bad_pointers, out);
}

// A resize's scale for `size` cells to `new_size`: 0 (the sizes give it),
// one that gives new_size as DINOv2's does, or any real, valid when it too
// gives new_size.
double resize_scale(FuzzInput& in, int64_t size, int64_t new_size, int invalid_sizes,
                    int& invalid) {
  switch (in.choice(3)) {
    case 0: return 0.0;
    case 1: return (double(new_size) + 0.1) / double(size);
    default: {
      const double scale = in.real(1.5);
      const bool gives_size = invalid_sizes > 0 || scale == 0.0 ||
                              (std::isfinite(scale) && scale > 0 &&
                               std::floor(double(size) * scale) == double(new_size));
      if (!gives_size) ++invalid;
      return scale;
    }
  }
}

void fuzz_resize_absolute(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t dim = in.size(24, invalid), prefix = in.count(4, invalid);
  const int64_t height = in.size(12, invalid), width = in.size(12, invalid);
  const int64_t new_height = in.count(16, invalid), new_width = in.count(16, invalid);
  posenc_absolute_resize_desc d;
  posenc_absolute_resize_desc_init(&d, dim, height, width, new_height, new_width);
  d.prefix_tokens = prefix;
  const int32_t interpolation = in.choice(5);
  std::memcpy(&d.interpolation, &interpolation, sizeof interpolation);
  d.antialias = in.choice(9) == 0 ? 2 : in.choice(2);
  invalid += (interpolation > 1) + (d.antialias > 1);
  const int invalid_sizes = invalid;
  d.height_scale = resize_scale(in, height, new_height, invalid_sizes, invalid);
  d.width_scale = resize_scale(in, width, new_width, invalid_sizes, invalid);
  const auto rows = [&](int64_t h, int64_t w) { return invalid_sizes > 0 ? 1 : prefix + h * w; };
  const size_t in_floats = elements({rows(height, width), dim}, invalid_sizes);
  const size_t out_floats = elements({rows(new_height, new_width), dim}, invalid_sizes);
  std::vector<float> buffer(in_floats + out_floats, 0.25f);
  const int pointers = in.choice(16);  // 0: desc NULL, 1: in NULL, 2: out NULL, 3: overlap
  float* out = buffer.data() + in_floats - (pointers == 3 ? 1 : 0);
  std::fill(out, out + out_floats, kUntouched);
  const posenc_status status = posenc_resize_absolute_table_2d(
      context.get(), pointers == 0 ? nullptr : &d, pointers == 1 ? nullptr : buffer.data(),
      pointers == 2 ? nullptr : out);
  // in always has elements; NULL out and an overlap need out to have some.
  expect_outcome(status,
                 invalid > 0 || pointers <= 1 || (pointers <= 3 && out_floats > 0),
                 std::vector<float>(out, out + out_floats));
}

}  // namespace posenc::fuzz
