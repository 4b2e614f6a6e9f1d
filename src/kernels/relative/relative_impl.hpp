// Relative-position kernels, templated on the xsimd arch.
#pragma once

#include <cstdint>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise/stream_store_impl.hpp"
#include "kernels/relative/relative_kernels.hpp"

namespace posenc::kernels {

template <class Arch>
int64_t clamp_count(int64_t value, int64_t high) {
  return value < 0 ? 0 : (value > high ? high : value);
}

template <class Arch, bool Stream>
void gather_row(const float* s, int64_t n, int64_t shift, int64_t visible, float* out,
                int64_t count) {
  // Columns [0, left) read below s (clamped to s[0]), [left, right) read
  // s[c + shift], [right, visible) read past s (clamped to s[n-1]).
  const int64_t left = clamp_count<Arch>(-shift, visible);
  const int64_t right = clamp_count<Arch>(n - shift, visible);
  // left <= right since n >= 1; s is only read where a column needs it.
  if (left > 0) fill_floats<Arch, Stream>(s[0], out, left);
  if (right > left) copy_floats<Arch, Stream>(s + left + shift, out + left, right - left);
  if (visible > right) fill_floats<Arch, Stream>(s[n - 1], out + right, visible - right);
  fill_floats<Arch, Stream>(-std::numeric_limits<float>::infinity(), out + visible,
                            count - visible);
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

// Where every segment starts on an aligned batch and is whole batches, the
// sums are streamed as they are made: each store is a non-temporal batch,
// and a line split between segments is still written whole, by consecutive
// stores. Elsewhere a segment's ends would share lines with its neighbours
// (write_floats): the sums are made in a stage in the L1 cache and streamed
// from there (stream_through_stage). Without non-temporal stores this is
// broadcast_sum_row.
template <class Arch>
void broadcast_sum_row_stream(const float* h, int64_t h_count, const float* w, int64_t w_count,
                              float* out) {
  using batch = xsimd::batch<float, Arch>;
  if (!kNonTemporalStores) {
    broadcast_sum_row<Arch>(h, h_count, w, w_count, out);
    return;
  }
  if (h_count <= 0 || w_count <= 0) return;
  if (reinterpret_cast<uintptr_t>(out) % Arch::alignment() == 0 && w_count % batch::size == 0) {
    for (int64_t x = 0; x < h_count; ++x) {
      const batch hx(h[x]);
      for (int64_t y = 0; y < w_count; y += batch::size) {
        store_batch_aligned<Arch, true>(hx + batch::load_unaligned(w + y),
                                        out + x * w_count + y);
      }
    }
  } else {
    stream_through_stage<Arch>(
        h_count, w_count, out,
        [&](int64_t x, int64_t count, int64_t y, int64_t part, float* stage) {
          broadcast_sum_row<Arch>(h + x, count, w + y, part, stage);
        });
  }
}

template <class Arch>
constexpr RelativeKernels make_relative_kernels() {
  return RelativeKernels{&gather_row<Arch, false>, &gather_row<Arch, true>,
                         &broadcast_sum_row<Arch>, &broadcast_sum_row_stream<Arch>};
}

}  // namespace posenc::kernels
