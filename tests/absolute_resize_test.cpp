// posenc_resize_absolute_table_2d: values worked out from torch's
// interpolate rules by hand, the double reference over many grids, the
// same bits on any thread count, errors and empty calls.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "compare.hpp"
#include "posenc/absolute.hpp"
#include "posenc/bias.hpp"
#include "reference/absolute.hpp"

namespace posenc::test {
namespace {

namespace ref = posenc::reference;

constexpr posenc_interpolation kModes[] = {POSENC_INTERPOLATION_BICUBIC,
                                           POSENC_INTERPOLATION_BILINEAR};

// A zeroed desc (no prefix, no antialias) of these sizes.
posenc_absolute_resize_desc plain_desc(int64_t dim, int64_t height, int64_t width,
                                       int64_t new_height, int64_t new_width,
                                       posenc_interpolation interpolation) {
  posenc_absolute_resize_desc d{};
  d.dim = dim;
  d.height = height;
  d.width = width;
  d.new_height = new_height;
  d.new_width = new_width;
  d.interpolation = interpolation;
  return d;
}

int64_t out_floats(const posenc_absolute_resize_desc& d) {
  return (d.prefix_tokens + d.new_height * d.new_width) * d.dim;
}

std::vector<float> resized(const posenc_absolute_resize_desc& d, const std::vector<float>& in,
                           int threads = 1) {
  const Context context(Isa::automatic, threads);
  std::vector<float> out(size_t(out_floats(d)));
  resize_absolute_table_2d(context, d, in.data(), out.data());
  return out;
}

// A table of `prefix` rows 100, 101, ... and a separable grid v(y, x) =
// f(y) g(x), in column c scaled by c + 1; resized, it is f'(y) g'(x) (c + 1)
// with f' and g' the 1D resizes worked out below.
template <class T>
std::vector<T> separable_table(const std::vector<double>& f, const std::vector<double>& g,
                               int64_t dim, int64_t prefix) {
  std::vector<T> table;
  for (int64_t i = 0; i < prefix * dim; ++i) table.push_back(T(100 + i));
  for (double fy : f) {
    for (double gx : g) {
      for (int64_t c = 0; c < dim; ++c) table.push_back(T(fy * gx * double(c + 1)));
    }
  }
  return table;
}

// Without antialias: bilinear [0, 10, 40] to 5 reads u = max((o + 0.5)
// 3/5 - 0.5, 0) = 0, 0.4, 1, 1.6, 2.2 (the last index clamped): 0, 4, 10,
// 28, 40. Bicubic (Keys, A = -0.75) of the same: u = -0.2, 0.4, 1, 1.6, 2.2
// give -0.96, 1.72, 10, 29.08, 42.88 (at u = -0.2, f = 0.8: K(1.8) =
// -0.024, K(0.8) = 0.2, K(0.2) = 0.92, K(1.2) = -0.096 on inputs -2 .. 1
// clamped to 0, 0, 0, 1); [1, 2, 4, 8, 16] to 3 bicubically, u = 1/3, 2,
// 11/3: 130/108, 4, 1480/108.
TEST(ResizeAbsoluteTable2d, InterpolatesAsTorch) {
  const std::vector<double> f = {0, 10, 40}, g = {1, 2, 4, 8, 16};
  posenc_absolute_resize_desc d = plain_desc(2, 3, 5, 5, 3, POSENC_INTERPOLATION_BICUBIC);
  d.prefix_tokens = 2;
  EXPECT_TRUE(all_close(resized(d, separable_table<float>(f, g, 2, 2)).data(),
                        separable_table<double>({-0.96, 1.72, 10, 29.08, 42.88},
                                                {130.0 / 108, 4, 1480.0 / 108}, 2, 2),
                        1e-5, 1e-6));
  // Bilinear, [0, 10, 40] to 5 along the width of a grid one cell high.
  d = plain_desc(1, 1, 3, 1, 5, POSENC_INTERPOLATION_BILINEAR);
  EXPECT_TRUE(all_close(resized(d, {0, 10, 40}).data(), {0, 4, 10, 28, 40}, 1e-6, 1e-6));
  // Downsampling [0, 1, 4, 9, 16] to 3: u = 1/3, 2, 11/3: 1/3, 4, 9 + 7 * 2/3.
  d = plain_desc(1, 5, 1, 3, 1, POSENC_INTERPOLATION_BILINEAR);
  EXPECT_TRUE(
      all_close(resized(d, {0, 1, 4, 9, 16}).data(), {1.0 / 3, 4, 41.0 / 3}, 1e-6, 1e-6));
}

// With antialias (Pillow's filters, normalized over the support).
// Bicubic 4 to 2: s = 2, support 4; output 0 has center 1 and reads inputs
// 0 .. 3 at (i - 1 + 0.5) / 2 = -0.25, 0.25, 0.75, 1.25, where the cubic
// with A = -0.5 is 0.8671875, 0.8671875, 0.2265625, -0.0703125 (sum
// 1.890625); output 1 (center 3) the same weights reversed. Bilinear 2 to
// 4 upsamples as without antialias: [0, 1] to 0, 0.25, 0.75, 1.
TEST(ResizeAbsoluteTable2d, AntialiasesAsTorch) {
  const double k[] = {0.8671875, 0.8671875, 0.2265625, -0.0703125}, total = 1.890625;
  const std::vector<double> v = {3, -1, 2, 5};
  double first = 0, second = 0;
  for (size_t i = 0; i < 4; ++i) {
    first += k[i] * v[i] / total;
    second += k[3 - i] * v[i] / total;
  }
  posenc_absolute_resize_desc d = plain_desc(1, 4, 1, 2, 1, POSENC_INTERPOLATION_BICUBIC);
  d.antialias = 1;
  EXPECT_TRUE(all_close(resized(d, {3, -1, 2, 5}).data(), {first, second}, 1e-6, 1e-6));
  d = plain_desc(1, 1, 2, 1, 4, POSENC_INTERPOLATION_BILINEAR);
  d.antialias = 1;
  EXPECT_TRUE(all_close(resized(d, {0, 1}).data(), {0, 0.25, 0.75, 1}, 1e-6, 1e-6));
}

// Height 4 with scale 1.2 stays 4 (floor 4.8): bilinear reads each row
// with weight 1 (and again with 0), antialiased modes copy the axis, as
// torch does; bicubic resamples it by 1/1.2 (u = -0.08, 0.75, 1.58, 2.42).
TEST(ResizeAbsoluteTable2d, AnAxisThatKeepsItsSizeUnderAScale) {
  const std::vector<float> in = {0, 1, 2, 3};
  for (auto mode : kModes) {
    for (int antialias : {0, 1}) {
      posenc_absolute_resize_desc d = plain_desc(1, 4, 1, 4, 1, mode);
      d.antialias = antialias;
      d.height_scale = 1.2;
      const std::vector<float> out = resized(d, in);
      EXPECT_TRUE(all_close(out.data(), ref::resize_absolute_table_2d(d, in.data()), 1e-6, 1e-6));
      const bool kept = mode == POSENC_INTERPOLATION_BILINEAR || antialias != 0;
      EXPECT_EQ(out == in, kept) << "mode " << mode << " antialias " << antialias;
    }
  }
}

// Each tap multiplies its input, weight 0 included, at clamped indices too,
// as torch reads them. Bicubic 3 to 5 (the width of 1 read 4 times with
// weights 0, 1, 0, 0) with inf at input 0 gives NaN wherever a tap reads it:
// outputs 0 to 3; output 4 (u = 2.2) reads inputs 1 and 2 only: 2.096.
// Bilinear likewise reads the width's one cell with weight 1 and again 0:
// NaN in outputs 0 and 1 (u = 0, 0.4), then 1, 1.6, 2.
TEST(ResizeAbsoluteTable2d, NonFiniteInputsReachWhatTorchReaches) {
  const float inf = std::numeric_limits<float>::infinity();
  posenc_absolute_resize_desc d = plain_desc(1, 3, 1, 5, 1, POSENC_INTERPOLATION_BICUBIC);
  const std::vector<float> cubic = resized(d, {inf, 1, 2});
  for (int o = 0; o < 4; ++o) EXPECT_TRUE(std::isnan(cubic[size_t(o)])) << o;
  EXPECT_NEAR(cubic[4], 2.096, 1e-6);
  d.interpolation = POSENC_INTERPOLATION_BILINEAR;
  const std::vector<float> linear = resized(d, {inf, 1, 2});
  EXPECT_TRUE(std::isnan(linear[0]) && std::isnan(linear[1]));
  EXPECT_TRUE(all_close(linear.data() + 2, {1, 1.6, 2}, 1e-6, 1e-6));
  // The relative resizes alike: a linear resize to the same size reads row 1
  // with weight 1 and 0 (NaN); 2 rows to 3 read row 0 with weights 1 and 0.5
  // (torch's 1D kernel has no second axis: inf stays inf); a 1x1 bicubic
  // grid reads its cell with K(1) = 0.
  std::vector<float> rows(3);
  const std::vector<float> one_inf = {1, inf}, inf_one = {inf, 1};
  resize_relative_table(2, 1, one_inf.data(), 2, rows.data());
  EXPECT_EQ(rows[0], 1.0f);
  EXPECT_TRUE(std::isnan(rows[1]));
  resize_relative_table(2, 1, inf_one.data(), 3, rows.data());
  EXPECT_EQ(rows, std::vector<float>({inf, inf, 1}));
  std::vector<float> grid(9);
  resize_relative_bias_table_2d(1, 1, 1, 2, 2, false, one_inf.data() + 1, grid.data());
  for (float v : grid) EXPECT_TRUE(std::isnan(v));
}

// timm's defaults (posenc_absolute_resize_desc_init), and a grid resized
// to its own size is itself in every mode.
TEST(ResizeAbsoluteTable2d, DefaultsAndIdentity) {
  const posenc_absolute_resize_desc d = absolute_resize_desc(8, 3, 4, 5, 6);
  EXPECT_EQ(d.prefix_tokens, 1);
  EXPECT_EQ(d.interpolation, POSENC_INTERPOLATION_BICUBIC);
  EXPECT_EQ(d.antialias, 1);
  EXPECT_EQ(d.height_scale, 0.0);
  EXPECT_EQ(d.width_scale, 0.0);
  const std::vector<float> in = random_floats(size_t((1 + 7 * 5) * 3), 11);
  for (auto mode : kModes) {
    for (int antialias : {0, 1}) {
      posenc_absolute_resize_desc same = plain_desc(3, 7, 5, 7, 5, mode);
      same.prefix_tokens = 1;
      same.antialias = antialias;
      EXPECT_EQ(resized(same, in), in) << "mode " << mode << " antialias " << antialias;
    }
  }
}

// Every mode on grids of 1, odd, prime and non-square sizes, up and down,
// with and without prefix rows and a scale factor, against the reference.
TEST(ResizeAbsoluteTable2d, MatchesReference) {
  struct Grid {
    int64_t height, width, new_height, new_width;
  };
  const Grid grids[] = {{1, 1, 1, 1},   {1, 1, 3, 2},    {2, 3, 1, 1},  {7, 9, 13, 4},
                        {14, 14, 37, 23}, {37, 37, 16, 16}, {5, 3, 17, 2}, {24, 24, 7, 31}};
  uint32_t seed = 1;
  for (const Grid& grid : grids) {
    for (int64_t dim : {1, 3, 17}) {
      for (int64_t prefix : {0, 1, 5}) {
        for (auto mode : kModes) {
          for (int antialias : {0, 1}) {
            posenc_absolute_resize_desc d = plain_desc(dim, grid.height, grid.width,
                                                       grid.new_height, grid.new_width, mode);
            d.prefix_tokens = prefix;
            d.antialias = antialias;
            SCOPED_TRACE(testing::Message()
                         << grid.height << "x" << grid.width << " to " << grid.new_height << "x"
                         << grid.new_width << " dim " << dim << " prefix " << prefix << " mode "
                         << mode << " antialias " << antialias);
            const std::vector<float> in = random_floats(
                size_t((prefix + grid.height * grid.width) * dim), seed++);
            EXPECT_TRUE(all_close(resized(d, in).data(),
                                  ref::resize_absolute_table_2d(d, in.data()), 1e-6, 1e-6));
          }
        }
      }
    }
  }
}

// DINOv2's scale factor (m + 0.1) / n: 16x16 to 23x11, whose source
// coordinates differ from the sizes' 16/23 and 16/11.
TEST(ResizeAbsoluteTable2d, ScaleFactorsAsDinov2) {
  for (auto mode : kModes) {
    for (int antialias : {0, 1}) {
      posenc_absolute_resize_desc d = plain_desc(6, 16, 16, 23, 11, mode);
      d.prefix_tokens = 1;
      d.antialias = antialias;
      d.height_scale = (23 + 0.1) / 16;
      d.width_scale = (11 + 0.1) / 16;
      const std::vector<float> in = random_floats(size_t((1 + 256) * 6), 7);
      const std::vector<float> got = resized(d, in);
      EXPECT_TRUE(all_close(got.data(), ref::resize_absolute_table_2d(d, in.data()), 1e-6, 1e-6));
      posenc_absolute_resize_desc by_size = d;
      by_size.height_scale = by_size.width_scale = 0;
      EXPECT_NE(got, resized(by_size, in)) << "mode " << mode << " antialias " << antialias;
    }
  }
}

// A task per output row, each summed alone: the same bits on 1 to 3
// threads, for a grid of many rows (DINOv2-S at 518 to 1036 pixels).
TEST(ResizeAbsoluteTable2d, SameBitsOnAnyThreadCount) {
  posenc_absolute_resize_desc d = absolute_resize_desc(384, 37, 37, 74, 74);
  const std::vector<float> in = random_floats(size_t((1 + 37 * 37) * 384), 5);
  const std::vector<float> one = resized(d, in, 1);
  EXPECT_TRUE(all_close(one.data(), ref::resize_absolute_table_2d(d, in.data()), 1e-6, 1e-6));
  for (int threads : {2, 3}) EXPECT_TRUE(bitwise_equal(resized(d, in, threads), one));
}

// Bad arguments name themselves and write nothing.
TEST(ResizeAbsoluteTable2d, Errors) {
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  const posenc_absolute_resize_desc good = absolute_resize_desc(4, 3, 3, 5, 5);
  const std::vector<float> in = random_floats(size_t((1 + 9) * 4), 3);
  GuardedFloats out(size_t((1 + 25) * 4));
  const auto call = [&](const posenc_absolute_resize_desc& d) {
    return posenc_resize_absolute_table_2d(nullptr, &d, in.data(), out.data());
  };
  const auto with = [&](auto change) {
    posenc_absolute_resize_desc d = good;
    change(d);
    return d;
  };
  using D = posenc_absolute_resize_desc;
  EXPECT_TRUE(fails_with(posenc_resize_absolute_table_2d(nullptr, nullptr, in.data(), out.data()),
                         POSENC_ERROR_NULL_POINTER, "desc"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.dim = 0; })), kInvalid, "desc->dim"));
  EXPECT_TRUE(
      fails_with(call(with([](D& d) { d.prefix_tokens = -1; })), kInvalid, "desc->prefix_tokens"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.height = 0; })), kInvalid, "desc->height"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.width = -2; })), kInvalid, "desc->width"));
  EXPECT_TRUE(
      fails_with(call(with([](D& d) { d.new_height = -1; })), kInvalid, "desc->new_height"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { store_enum(d.interpolation, 2); })), kInvalid,
                         "desc->interpolation"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { store_enum(d.interpolation, -1); })), kInvalid,
                         "desc->interpolation"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.antialias = 2; })), kInvalid, "desc->antialias"));
  EXPECT_TRUE(
      fails_with(call(with([](D& d) { d.height_scale = -1; })), kInvalid, "desc->height_scale"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.width_scale = std::nan(""); })), kInvalid,
                         "desc->width_scale"));
  EXPECT_TRUE(fails_with(call(with([](D& d) {
                           d.width_scale = std::numeric_limits<double>::infinity();
                         })),
                         kInvalid, "desc->width_scale"));
  // 3 * 1.6 = 4.8: floor 4, not 5.
  EXPECT_TRUE(
      fails_with(call(with([](D& d) { d.height_scale = 1.6; })), kInvalid, "desc->height_scale"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.height = d.width = int64_t(1) << 32; })),
                         POSENC_ERROR_OVERFLOW, "in"));
  // A grid without cells still has sides whose bytes must fit (the fuzzer's find).
  EXPECT_TRUE(fails_with(call(with([](D& d) {
                           d.new_height = 0;
                           d.new_width = (int64_t(1) << 62) + 1;
                         })),
                         POSENC_ERROR_OVERFLOW, "out"));
  EXPECT_TRUE(fails_with(posenc_resize_absolute_table_2d(nullptr, &good, nullptr, out.data()),
                         POSENC_ERROR_NULL_POINTER, "in"));
  EXPECT_TRUE(fails_with(posenc_resize_absolute_table_2d(nullptr, &good, in.data(), nullptr),
                         POSENC_ERROR_NULL_POINTER, "out"));
  EXPECT_TRUE(fails_with(posenc_resize_absolute_table_2d(nullptr, &good, in.data(),
                                                         offset_bytes(out.data(), 2)),
                         kInvalid, "out"));
  EXPECT_TRUE(out.payload_untouched());
  // out over in.
  std::vector<float> shared(size_t((1 + 25) * 4 + 8));
  EXPECT_TRUE(fails_with(
      posenc_resize_absolute_table_2d(nullptr, &good, shared.data() + 8, shared.data()),
      POSENC_ERROR_ALIASING, "out"));
  // A scale giving the new size is taken: 3 * 1.7 = 5.1.
  EXPECT_EQ(call(with([](D& d) { d.height_scale = d.width_scale = 1.7; })), POSENC_OK);
  EXPECT_TRUE(out.guards_intact());
}

// An empty grid: the prefix rows alone are written; no prefix either, and
// out may be NULL. The input grid cannot be empty.
TEST(ResizeAbsoluteTable2d, EmptyCalls) {
  posenc_absolute_resize_desc d = absolute_resize_desc(4, 3, 3, 0, 5);
  const std::vector<float> in = random_floats(size_t((1 + 9) * 4), 3);
  GuardedFloats out(4);
  ASSERT_EQ(posenc_resize_absolute_table_2d(nullptr, &d, in.data(), out.data()), POSENC_OK);
  EXPECT_EQ(std::vector<float>(out.data(), out.data() + 4),
            std::vector<float>(in.begin(), in.begin() + 4));
  EXPECT_TRUE(out.guards_intact());
  d.prefix_tokens = 0;
  EXPECT_EQ(posenc_resize_absolute_table_2d(nullptr, &d, in.data(), nullptr), POSENC_OK);
  EXPECT_TRUE(fails_with(posenc_resize_absolute_table_2d(nullptr, &d, nullptr, nullptr),
                         POSENC_ERROR_NULL_POINTER, "in"));
}

}  // namespace
}  // namespace posenc::test
