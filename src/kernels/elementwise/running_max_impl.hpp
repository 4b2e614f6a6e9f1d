// The running maximum of a row of scores, kept in lanes while whole batches
// are seen, templated on the xsimd arch.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/batch_inline.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"

namespace posenc::kernels {

// -inf until something is seen. A NaN may or may not win; either way it
// reaches the softmax's output through exp(x - max).
template <class Arch>
struct RunningMax {
  using batch = xsimd::batch<float, Arch>;

  batch lanes = batch(-std::numeric_limits<float>::infinity());
  float tail = -std::numeric_limits<float>::infinity();

  void see(batch x) { lanes = xsimd::max(lanes, x); }
  void see(float x) { tail = std::max(tail, x); }

  // A tree of maxima (the row's max is on the path of every softmax row).
  float value() const {
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
      return std::max(tail, _mm512_reduce_max_ps(lanes));
    } else
#endif
    {
      alignas(64) float parts[batch::size];
      lanes.store_aligned(parts);
      for (std::size_t width = batch::size / 2; width > 0; width /= 2) {
        for (std::size_t i = 0; i < width; ++i) parts[i] = std::max(parts[i], parts[i + width]);
      }
      return std::max(tail, parts[0]);
    }
  }
};

// m.see(step(j)) for the whole batches j = 0, lanes, .. of [0, n), in two
// running maxima so that the loop waits on no max's latency; returns where
// the tail (fewer than a batch) starts. The maxima are locals, seen by m
// at the end: a step's stores may alias the caller's m, so m's lanes
// would make a round trip through memory in every iteration.
template <class Arch, class Step>
POSENC_BATCH_INLINE int64_t see_whole_batches(int64_t n, const Step& step, RunningMax<Arch>& m) {
  constexpr int64_t lanes = RunningMax<Arch>::batch::size;
  RunningMax<Arch> first, second;
  int64_t j = 0;
  for (; j + 2 * lanes <= n; j += 2 * lanes) {
    first.see(step(j));
    second.see(step(j + lanes));
  }
  for (; j + lanes <= n; j += lanes) first.see(step(j));
  m.see(xsimd::max(first.lanes, second.lanes));
  return j;
}

// scores[j] += bias(j) for the whole batches j = 0, lanes, .. of [0, n),
// bias(j) the batch of columns [j, j + lanes), seen by m; returns where the
// tail (fewer than a batch) starts.
template <class Arch, class Bias>
POSENC_BATCH_INLINE int64_t add_whole_batches(float* scores, int64_t n, const Bias& bias,
                                              RunningMax<Arch>& m) {
  using batch = typename RunningMax<Arch>::batch;
  const auto add_at = [&](int64_t j) {
    const batch v = batch::load_unaligned(scores + j) + bias(j);
    v.store_unaligned(scores + j);
    return v;
  };
  return see_whole_batches<Arch>(n, add_at, m);
}

// The largest of x[0, n); -inf for n = 0. Four running maxima, so that the
// loop waits on no max's latency.
template <class Arch>
float max_of(const float* x, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  RunningMax<Arch> m0, m1, m2, m3;
  int64_t j = 0;
  for (; j + 4 * lanes <= n; j += 4 * lanes) {
    m0.see(batch::load_unaligned(x + j));
    m1.see(batch::load_unaligned(x + j + lanes));
    m2.see(batch::load_unaligned(x + j + 2 * lanes));
    m3.see(batch::load_unaligned(x + j + 3 * lanes));
  }
  for (; j + lanes <= n; j += lanes) m0.see(batch::load_unaligned(x + j));
  if (j < n) m0.see(load_partial<Arch>(x + j, n - j, -std::numeric_limits<float>::infinity()));
  m0.see(xsimd::max(xsimd::max(m1.lanes, m2.lanes), m3.lanes));
  return m0.value();
}

}  // namespace posenc::kernels
