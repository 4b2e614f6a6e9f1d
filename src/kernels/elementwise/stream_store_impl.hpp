// Whole-batch stores that may bypass the caches, and the row writers built
// on them: for outputs far larger than the caches that nothing reads soon,
// whose lines need not be read before they are written. Templated on the
// xsimd arch; shared by the kernel families that write such outputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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
// where the ISA has such stores; the caller fences them (store_fence in
// runtime/store_fence.hpp) before another thread reads them.
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

// Streams `segments` consecutive segments of `length` floats to out, made
// in a stage in the L1 cache by make(first, count, offset, part, stage):
// the floats [offset, offset + part) of segments [first, first + count),
// packed. Whole segments are staged together (pieces of a long one), and
// streamed in stretches of at most kStageFloats, whose ends alone share
// lines with ordinary stores (write_floats). Nothing with no segments or
// segments of no floats.
template <class Arch, class Make>
void stream_through_stage(int64_t segments, int64_t length, float* out, const Make& make) {
  constexpr int64_t kStageFloats = 2048;
  if (segments <= 0 || length <= 0) return;
  alignas(kCacheLineBytes) float stage[kStageFloats];
  const int64_t per_stage = std::max<int64_t>(1, kStageFloats / length);  // segments
  const int64_t piece = std::min(length, kStageFloats);  // of a segment (per_stage 1)
  for (int64_t first = 0; first < segments; first += per_stage) {
    const int64_t count = std::min(per_stage, segments - first);
    for (int64_t offset = 0; offset < length; offset += piece) {
      const int64_t part = std::min(piece, length - offset);
      make(first, count, offset, part, stage);
      copy_floats<Arch, true>(stage, out + first * length + offset, count * part);
    }
  }
}

}  // namespace posenc::kernels
