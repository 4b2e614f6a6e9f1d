// Elementwise kernels, templated on the xsimd arch.
#pragma once

#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise/bf16_impl.hpp"
#include "kernels/elementwise/elementwise_kernels.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"

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

// Full batches, then a tail of n < lanes by partial loads and stores.
template <class Arch>
void f32_to_bf16(const float* x, uint16_t* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    store_rounded_bf16<Arch>(batch::load_unaligned(x + j), out + j);
  }
  if (j < n) store_floats_partial<Arch>(load_partial<Arch>(x + j, n - j, 0.0f), out + j, n - j);
}

template <class Arch>
void bf16_to_f32(const uint16_t* x, float* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) load_bf16<Arch>(x + j).store_unaligned(out + j);
  if (j < n) store_partial<Arch>(load_floats_partial<Arch>(x + j, n - j), out + j, n - j);
}

template <class Arch>
constexpr ElementwiseKernels make_elementwise_kernels() {
  return ElementwiseKernels{&add_f32<Arch>, &f32_to_bf16<Arch>, &bf16_to_f32<Arch>};
}

}  // namespace posenc::kernels
