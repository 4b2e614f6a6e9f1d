// Attention kernels (softmax, scaling, transposes), templated on the xsimd
// arch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "kernels/attention/attention_kernels.hpp"
#include "kernels/attention/running_max_impl.hpp"
#include "kernels/attention/softmax_exp_impl.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"

namespace posenc::kernels {

// The first `count` lanes of x, as bf16 bits, to out. With finite_only the
// rounding skips the care a NaN needs (NaN payloads could round to -0).
template <class Arch, bool finite_only>
void store_bf16(xsimd::batch<float, Arch> x, uint16_t* out, int64_t count) {
  using ubatch = xsimd::batch<uint32_t, Arch>;
  alignas(64) uint32_t wide[ubatch::size];
  if constexpr (finite_only) {
    const ubatch bits = xsimd::bitwise_cast<ubatch>(x);
    ((bits + ubatch(0x7FFFu) + ((bits >> 16) & ubatch(1u))) >> 16).store_aligned(wide);
  } else {
    bf16_bits<Arch>(x).store_aligned(wide);
  }
  for (int64_t l = 0; l < count; ++l) out[l] = uint16_t(wide[l]);
}

// exp(x[j] - shift) for j < n, written over x or, if out_bf16 is not NULL,
// to out_bf16 as bf16 (x is then left as it was); returns the sum of the
// fp32 values. finite_only as store_bf16's.
template <class Arch, bool finite_only>
float exp_shifted_sum(float* x, int64_t n, float shift, uint16_t* out_bf16) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  const batch s(shift);
  batch acc(0.0f);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const batch e = softmax_exp<Arch>(batch::load_unaligned(x + j) - s);
    if (out_bf16 != nullptr) {
      store_bf16<Arch, finite_only>(e, out_bf16 + j, lanes);
    } else {
      e.store_unaligned(x + j);
    }
    acc += e;
  }
  if (j < n) {  // the tail, padded with -inf (exp gives 0)
    alignas(64) float tail[lanes];
    std::fill(tail, tail + lanes, -std::numeric_limits<float>::infinity());
    std::copy(x + j, x + n, tail);
    const batch e = softmax_exp<Arch>(batch::load_aligned(tail) - s);
    if (out_bf16 != nullptr) {
      store_bf16<Arch, finite_only>(e, out_bf16 + j, n - j);
    } else {
      e.store_aligned(tail);
      std::copy(tail, tail + (n - j), x + j);
    }
    acc += e;
  }
  return xsimd::hadd(acc);
}

// exp_shifted_sum with the fast bf16 rounding; a row with a NaN (its sum is
// then NaN) is done again with the rounding that keeps NaN a NaN.
template <class Arch>
float exp_shifted_sum(float* x, int64_t n, float shift, uint16_t* out_bf16) {
  const float sum = exp_shifted_sum<Arch, true>(x, n, shift, out_bf16);
  if (out_bf16 == nullptr || sum == sum) return sum;
  return exp_shifted_sum<Arch, false>(x, n, shift, out_bf16);
}

template <class Arch>
void scale_f32(const float* x, float factor, float* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  const batch f(factor);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) (batch::load_unaligned(x + j) * f).store_unaligned(out + j);
  for (; j < n; ++j) out[j] = x[j] * factor;
}

template <class Arch>
float softmax_block(float* scores, int64_t valid, int64_t n, float block_max, float* row_max,
                    float* row_sum, uint16_t* probs_bf16) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const float old_max = *row_max;
  const float new_max = std::max(old_max, block_max);
  // A row whose visible scores are all -inf so far: shift by 0, so that its
  // probabilities are 0 (not NaN) and later blocks can still carry weight.
  const float shift = new_max == neg_inf ? 0.0f : new_max;
  const float sum = exp_shifted_sum<Arch>(scores, valid, shift, probs_bf16);
  if (probs_bf16 != nullptr) {
    std::fill(probs_bf16 + valid, probs_bf16 + n, uint16_t(0));
  } else {
    std::fill(scores + valid, scores + n, 0.0f);
  }
  float correction = 1.0f;
  if (old_max != new_max) correction = old_max == neg_inf ? 0.0f : std::exp(old_max - new_max);
  *row_sum = *row_sum * correction + sum;
  *row_max = new_max;
  return correction;
}

template <class Arch>
void softmax_row(float* x, int64_t n) {
  const float sum = exp_shifted_sum<Arch>(x, n, max_of<Arch>(x, n), nullptr);
  scale_f32<Arch>(x, 1.0f / sum, x, n);
}

// Transposes in tiles of 8 x 8 so that both sides stay in cache lines.
template <class Arch, class T>
void transpose_tiled(const T* src, int64_t rows, int64_t cols, int64_t ld_src, T* dst,
                     int64_t ld_dst) {
  constexpr int64_t tile = 8;
  for (int64_t r0 = 0; r0 < rows; r0 += tile) {
    const int64_t r1 = std::min(rows, r0 + tile);
    for (int64_t c0 = 0; c0 < cols; c0 += tile) {
      const int64_t c1 = std::min(cols, c0 + tile);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
      }
    }
  }
}

template <class Arch>
void transpose_32(const uint32_t* src, int64_t rows, int64_t cols, int64_t ld_src,
                  uint32_t* dst, int64_t ld_dst) {
  transpose_tiled<Arch>(src, rows, cols, ld_src, dst, ld_dst);
}

template <class Arch>
void transpose_16(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld_src,
                  uint16_t* dst, int64_t ld_dst) {
  transpose_tiled<Arch>(src, rows, cols, ld_src, dst, ld_dst);
}

template <class Arch>
constexpr AttentionKernels make_attention_kernels() {
  return AttentionKernels{&softmax_block<Arch>, &softmax_row<Arch>, &scale_f32<Arch>,
                          &transpose_32<Arch>, &transpose_16<Arch>};
}

}  // namespace posenc::kernels
