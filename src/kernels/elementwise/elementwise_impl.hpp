// Elementwise kernels, templated on the xsimd arch.
#pragma once

#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

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

// bf16 bits of one float: round to nearest even on the upper 16 bits; a NaN
// keeps its sign and top mantissa bits, with the quiet bit set.
template <class Arch>
xsimd::batch<uint32_t, Arch> bf16_bits(xsimd::batch<float, Arch> x) {
  using ubatch = xsimd::batch<uint32_t, Arch>;
  const ubatch bits = xsimd::bitwise_cast<ubatch>(x);
  const ubatch rounded = (bits + ubatch(0x7FFFu) + ((bits >> 16) & ubatch(1u))) >> 16;
  const ubatch quiet_nan = (bits >> 16) | ubatch(0x40u);
  const auto is_nan = (bits & ubatch(0x7FFFFFFFu)) > ubatch(0x7F800000u);
  return xsimd::select(is_nan, quiet_nan, rounded);
}

template <class Arch>
void f32_to_bf16(const float* x, uint16_t* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  alignas(64) uint32_t wide[lanes];
  for (int64_t j = 0; j < n; j += lanes) {
    const int64_t count = n - j < lanes ? n - j : lanes;
    batch values;
    if (count == lanes) {
      values = batch::load_unaligned(x + j);
    } else {
      alignas(64) float tail[lanes] = {};
      std::memcpy(tail, x + j, size_t(count) * sizeof(float));
      values = batch::load_aligned(tail);
    }
    bf16_bits<Arch>(values).store_aligned(wide);
    for (int64_t l = 0; l < count; ++l) out[j + l] = uint16_t(wide[l]);
  }
}

template <class Arch>
constexpr ElementwiseKernels make_elementwise_kernels() {
  return ElementwiseKernels{&add_f32<Arch>, &f32_to_bf16<Arch>};
}

}  // namespace posenc::kernels
