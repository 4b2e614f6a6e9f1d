// Relative-position kernels, templated on the xsimd arch.
#pragma once

#include <cstdint>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "kernels/relative/relative_kernels.hpp"

namespace posenc::kernels {

template <class Arch>
void fill_floats(float value, float* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  const batch v(value);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) v.store_unaligned(out + j);
  for (; j < n; ++j) out[j] = value;
}

template <class Arch>
void copy_floats(const float* x, float* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  int64_t j = 0;
  for (; j + 4 * lanes <= n; j += 4 * lanes) {
    const batch a = batch::load_unaligned(x + j);
    const batch b = batch::load_unaligned(x + j + lanes);
    const batch c = batch::load_unaligned(x + j + 2 * lanes);
    const batch d = batch::load_unaligned(x + j + 3 * lanes);
    a.store_unaligned(out + j);
    b.store_unaligned(out + j + lanes);
    c.store_unaligned(out + j + 2 * lanes);
    d.store_unaligned(out + j + 3 * lanes);
  }
  for (; j + lanes <= n; j += lanes) batch::load_unaligned(x + j).store_unaligned(out + j);
  for (; j < n; ++j) out[j] = x[j];
}

template <class Arch>
int64_t clamp_count(int64_t value, int64_t high) {
  return value < 0 ? 0 : (value > high ? high : value);
}

template <class Arch>
void gather_row(const float* s, int64_t n, int64_t shift, int64_t visible, float* out,
                int64_t count) {
  // Columns [0, left) read below s (clamped to s[0]), [left, right) read
  // s[c + shift], [right, visible) read past s (clamped to s[n-1]).
  const int64_t left = clamp_count<Arch>(-shift, visible);
  const int64_t right = clamp_count<Arch>(n - shift, visible);
  // left <= right since n >= 1; s is only read where a column needs it.
  if (left > 0) fill_floats<Arch>(s[0], out, left);
  if (right > left) copy_floats<Arch>(s + left + shift, out + left, right - left);
  if (visible > right) fill_floats<Arch>(s[n - 1], out + right, visible - right);
  fill_floats<Arch>(-std::numeric_limits<float>::infinity(), out + visible, count - visible);
}

template <class Arch>
void broadcast_sum_row(const float* h, int64_t h_count, const float* w, int64_t w_count,
                       float* out) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  if (w_count < lanes) {
    // Short segments: a full-width store runs into the following segments,
    // which the next stores overwrite; the segments where a full-width
    // store would pass the row's end are stored value by value.
    alignas(64) float padded[lanes] = {};
    for (int64_t y = 0; y < w_count; ++y) padded[y] = w[y];
    const batch wb = batch::load_aligned(padded);
    int64_t x = 0;
    for (; x * w_count + lanes <= h_count * w_count; ++x) {
      (batch(h[x]) + wb).store_unaligned(out + x * w_count);
    }
    for (; x < h_count; ++x) {
      for (int64_t y = 0; y < w_count; ++y) out[x * w_count + y] = h[x] + w[y];
    }
    return;
  }
  for (int64_t x = 0; x < h_count; ++x) {
    const batch hx(h[x]);
    float* row = out + x * w_count;
    for (int64_t y = 0; y + lanes <= w_count; y += lanes) {
      (hx + batch::load_unaligned(w + y)).store_unaligned(row + y);
    }
    // The tail as one more full batch ending at the segment's end (it
    // rewrites a few values with the same sums).
    const int64_t tail = w_count - lanes;
    if (w_count % lanes != 0) (hx + batch::load_unaligned(w + tail)).store_unaligned(row + tail);
  }
}

template <class Arch>
constexpr RelativeKernels make_relative_kernels() {
  return RelativeKernels{&gather_row<Arch>, &broadcast_sum_row<Arch>};
}

}  // namespace posenc::kernels
