// Elementwise kernels, templated on the xsimd arch.
#pragma once

#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise/bf16_impl.hpp"
#include "kernels/elementwise/elementwise_kernels.hpp"

namespace posenc::kernels {

template <class Arch>
void add_f32(const float* x, const float* y, float* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    (batch::load_unaligned(x + j) + batch::load_unaligned(y + j)).store_unaligned(out + j);
  }
  for (; j < n; ++j) out[j] = x[j] + y[j];
}

// Full batches in place; a tail of n < lanes through zero-padded local
// copies (as in bf16_to_f32 below).
template <class Arch>
void f32_to_bf16(const float* x, uint16_t* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    store_rounded_bf16<Arch>(batch::load_unaligned(x + j), out + j);
  }
  if (j == n) return;
  alignas(64) float tail[lanes] = {};
  alignas(64) uint16_t tail_out[lanes];
  std::memcpy(tail, x + j, size_t(n - j) * sizeof(float));
  store_rounded_bf16<Arch>(batch::load_aligned(tail), tail_out);
  std::memcpy(out + j, tail_out, size_t(n - j) * sizeof(uint16_t));
}

template <class Arch>
void bf16_to_f32(const uint16_t* x, float* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) load_bf16<Arch>(x + j).store_unaligned(out + j);
  if (j == n) return;
  uint16_t tail[lanes] = {};
  alignas(64) float tail_out[lanes];
  std::memcpy(tail, x + j, size_t(n - j) * sizeof(uint16_t));
  load_bf16<Arch>(tail).store_aligned(tail_out);
  std::memcpy(out + j, tail_out, size_t(n - j) * sizeof(float));
}

template <class Arch>
constexpr ElementwiseKernels make_elementwise_kernels() {
  return ElementwiseKernels{&add_f32<Arch>, &f32_to_bf16<Arch>, &bf16_to_f32<Arch>};
}

}  // namespace posenc::kernels
