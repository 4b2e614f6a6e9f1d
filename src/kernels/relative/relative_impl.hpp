// Relative-position kernels, templated on the xsimd arch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/relative/relative_kernels.hpp"
#include "runtime/prefetch.hpp"

namespace posenc::kernels {

// Whether store_batch_aligned's streamed stores are non-temporal (x86-64);
// elsewhere they are ordinary stores.
#if defined(__x86_64__)
constexpr bool kNonTemporalStores = true;
#else
constexpr bool kNonTemporalStores = false;
#endif

// Stores one batch at an address aligned to Arch::alignment(). Stream:
// non-temporal, bypassing the caches (no read-for-ownership of the lines),
// where the ISA has such stores; then stream_fence() must follow the last.
template <class Arch, bool Stream>
void store_batch_aligned(xsimd::batch<float, Arch> v, float* out) {
#if defined(__x86_64__)
  if constexpr (Stream && std::is_base_of<xsimd::avx512f, Arch>::value) {
    _mm512_stream_ps(out, v);
    return;
  } else if constexpr (Stream && std::is_base_of<xsimd::avx, Arch>::value) {
    _mm256_stream_ps(out, v);
    return;
  } else if constexpr (Stream && std::is_base_of<xsimd::sse2, Arch>::value) {
    _mm_stream_ps(out, v);
    return;
  }
#endif
  v.store_aligned(out);
}

template <class Arch, bool Stream>
void stream_fence() {
#if defined(__x86_64__)
  if constexpr (Stream) _mm_sfence();
#endif
}

// Writes out[j] = value_at(j) for j < n: whole batches from the first
// aligned address on (stored by store_batch_aligned), single values around.
// Streamed, the batches fill whole cache lines only: a line written partly
// by non-temporal stores and partly by ordinary ones (here, or by the call
// for the adjacent values) is read for ownership and leaves the write
// combining in parts, several times slower than whole lines.
template <class Arch, bool Stream, class BatchAt, class ValueAt>
void write_floats(float* out, int64_t n, const BatchAt& batch_at, const ValueAt& value_at) {
  constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
  constexpr bool whole_lines = Stream && kNonTemporalStores;
  constexpr int64_t align =
      (whole_lines ? kCacheLineBytes : int64_t(Arch::alignment())) / int64_t(sizeof(float));
  const auto address = reinterpret_cast<uintptr_t>(out);
  const int64_t misaligned = int64_t(address / sizeof(float) % align);
  const int64_t head = misaligned == 0 ? 0 : (align - misaligned < n ? align - misaligned : n);
  const int64_t batches_end = whole_lines ? head + (n - head) / align * align : n;
  int64_t j = 0;
  for (; j < head; ++j) out[j] = value_at(j);
  for (; j + lanes <= batches_end; j += lanes) {
    store_batch_aligned<Arch, Stream>(batch_at(j), out + j);
  }
  for (; j < n; ++j) out[j] = value_at(j);
}

template <class Arch, bool Stream>
void fill_floats(float value, float* out, int64_t n) {
  const xsimd::batch<float, Arch> v(value);
  write_floats<Arch, Stream>(
      out, n, [&](int64_t) { return v; }, [&](int64_t) { return value; });
}

template <class Arch, bool Stream>
void copy_floats(const float* x, float* out, int64_t n) {
  write_floats<Arch, Stream>(
      out, n, [&](int64_t j) { return xsimd::batch<float, Arch>::load_unaligned(x + j); },
      [&](int64_t j) { return x[j]; });
}

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
  stream_fence<Arch, Stream>();
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
// (write_floats): the sums are made in a stage in the L1 cache (whole
// segments, or pieces of a long one) and streamed from there in runs of
// kStageFloats, whose ends alone share lines. Without non-temporal stores
// this is broadcast_sum_row.
template <class Arch>
void broadcast_sum_row_stream(const float* h, int64_t h_count, const float* w, int64_t w_count,
                              float* out) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t kStageFloats = 2048;
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
    alignas(kCacheLineBytes) float stage[kStageFloats];
    const int64_t per_stage = std::max<int64_t>(1, kStageFloats / w_count);  // segments
    const int64_t piece = std::min(w_count, kStageFloats);  // of a segment (per_stage 1)
    for (int64_t x = 0; x < h_count; x += per_stage) {
      const int64_t segments = std::min(per_stage, h_count - x);
      for (int64_t y = 0; y < w_count; y += piece) {
        const int64_t length = std::min(piece, w_count - y);
        broadcast_sum_row<Arch>(h + x, segments, w + y, length, stage);
        copy_floats<Arch, true>(stage, out + x * w_count + y, segments * length);
      }
    }
  }
  stream_fence<Arch, true>();
}

template <class Arch>
constexpr RelativeKernels make_relative_kernels() {
  return RelativeKernels{&gather_row<Arch, false>, &gather_row<Arch, true>,
                         &broadcast_sum_row<Arch>, &broadcast_sum_row_stream<Arch>};
}

}  // namespace posenc::kernels
