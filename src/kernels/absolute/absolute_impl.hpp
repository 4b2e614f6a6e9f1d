// Absolute-encoding kernels, templated on the xsimd arch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "kernels/absolute/absolute_kernels.hpp"
#include "runtime/math_constants.hpp"

namespace posenc::kernels {

// theta reduced to [-pi, pi] in double, so that fp32 sin/cos of the result
// stay accurate for positions far past where k * w_i loses fp32 precision.
// (A template on the arch, like every helper here, so that no ISA's copy of
// an inline function is shared with another ISA's callers.)
template <class Arch>
double reduce_angle(double theta) {
  return theta - kTwoPi * std::nearbyint(theta * (1.0 / kTwoPi));
}

// From theta near 2^53 on, n = nearbyint(theta / 2pi) and n * 2pi round by
// whole radians: reduce_angle can leave angles outside [-pi, pi], past
// fp32's range near 2^180 (the largest RoPE angles taken). Those lanes of
// angle[0, n) (|angle| > 4) are reduced exactly instead.
template <class Arch>
void reduce_large_angles(int64_t position, const double* freqs, int64_t n, float* angle) {
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::abs(angle[i]) <= 4.0f)) {
      angle[i] = float(std::remainder(double(position) * freqs[i], kTwoPi));
    }
  }
}

template <class Arch>
void sinusoid_row(int64_t position, const double* freqs, int64_t dim,
                  posenc_sincos_layout layout, float* out) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t block = 64;
  static_assert(block % batch::size == 0, "block must hold whole batches");
  const int64_t sin_count = (dim + 1) / 2;
  const int64_t cos_count = dim / 2;
  alignas(64) float angle[block];
  alignas(64) float sines[block];
  alignas(64) float cosines[block];
  for (int64_t i0 = 0; i0 < sin_count; i0 += block) {
    const int64_t n = sin_count - i0 < block ? sin_count - i0 : block;
    for (int64_t i = 0; i < n; ++i) {
      angle[i] = float(reduce_angle<Arch>(double(position) * freqs[i0 + i]));
    }
    for (int64_t i = n; i < block; ++i) angle[i] = 0.0f;
    for (int64_t i = 0; i < n; i += batch::size) {
      batch a = batch::load_aligned(angle + i);
      if (xsimd::any(xsimd::abs(a) > batch(4.0f))) {  // rare: positions * frequencies >= 2^52
        reduce_large_angles<Arch>(position, freqs + i0 + i, std::min<int64_t>(batch::size, n - i),
                                  angle + i);
        a = batch::load_aligned(angle + i);
      }
      const auto sc = xsimd::sincos(a);
      sc.first.store_aligned(sines + i);
      sc.second.store_aligned(cosines + i);
    }
    const int64_t n_cos = cos_count - i0 < n ? cos_count - i0 : n;
    if (layout == POSENC_SINCOS_SPLIT) {
      std::memcpy(out + i0, sines, size_t(n) * sizeof(float));
      std::memcpy(out + sin_count + i0, cosines, size_t(n_cos) * sizeof(float));
    } else {
      float* row = out + 2 * i0;
      for (int64_t i = 0; i < n_cos; ++i) {
        row[2 * i] = sines[i];
        row[2 * i + 1] = cosines[i];
      }
      if (n_cos < n) row[2 * n_cos] = sines[n_cos];  // odd dim: a last sine alone
    }
  }
}

template <class Arch>
constexpr AbsoluteKernels make_absolute_kernels() {
  return AbsoluteKernels{&sinusoid_row<Arch>};
}

}  // namespace posenc::kernels
