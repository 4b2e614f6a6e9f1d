// RoPE kernels, templated on the xsimd arch. Every value is computed in fp32:
//   INTERLEAVED: out = x * C + swap_pairs(x) * S, with the row's duplicated
//                cosines C and signed sines S (no shuffle of the row);
//   HALF_SPLIT:  out[j] = a c - b s, out[j + P] = b c + a s for the halves
//                a = x[j], b = x[j + P] of the P = rotary_dim/2 pairs.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise/elementwise_impl.hpp"
#include "kernels/rope/rope_kernels.hpp"
#include "posenc/rope.h"

namespace posenc::kernels {

// n <= lanes values as floats, zero past n (bf16 widened exactly). Count is
// int64_t, or an integral_constant for full batches so that the bf16 loops
// have a fixed trip count and are vectorized.
template <class Arch, class Count>
xsimd::batch<float, Arch> load_floats(const float* p, Count n) {
  using batch = xsimd::batch<float, Arch>;
  if (n == int64_t(batch::size)) return batch::load_unaligned(p);
  alignas(64) float part[batch::size] = {};
  std::memcpy(part, p, size_t(n) * sizeof(float));
  return batch::load_aligned(part);
}

template <class Arch, class Count>
xsimd::batch<float, Arch> load_floats(const uint16_t* p, Count n) {
  using ubatch = xsimd::batch<uint32_t, Arch>;
  alignas(64) uint32_t wide[ubatch::size] = {};
  for (int64_t l = 0; l < n; ++l) wide[l] = uint32_t(p[l]) << 16;
  return xsimd::bitwise_cast<xsimd::batch<float, Arch>>(ubatch::load_aligned(wide));
}

template <class Arch, class Count>
void store_floats(xsimd::batch<float, Arch> v, float* p, Count n) {
  using batch = xsimd::batch<float, Arch>;
  if (n == int64_t(batch::size)) return v.store_unaligned(p);
  alignas(64) float part[batch::size];
  v.store_aligned(part);
  std::memcpy(p, part, size_t(n) * sizeof(float));
}

template <class Arch, class Count>
void store_floats(xsimd::batch<float, Arch> v, uint16_t* p, Count n) {
  alignas(64) uint32_t wide[xsimd::batch<uint32_t, Arch>::size];
  bf16_bits<Arch>(v).store_aligned(wide);
  for (int64_t l = 0; l < n; ++l) p[l] = uint16_t(wide[l]);
}

// Swaps the two floats of every 64-bit lane: [x0 x1 x2 x3] -> [x1 x0 x3 x2]
// (a rotate by 32 bits, which every ISA has, unlike a float swizzle).
template <class Arch>
xsimd::batch<float, Arch> swap_pairs(xsimd::batch<float, Arch> v) {
  using u64 = xsimd::batch<uint64_t, Arch>;
  const u64 bits = xsimd::bitwise_cast<u64>(v);
  return xsimd::bitwise_cast<xsimd::batch<float, Arch>>((bits << 32) | (bits >> 32));
}

// Calls step(i, lanes) for full batches of [0, n) (lanes as an
// integral_constant), then step(i, rest) with the int64_t rest.
template <class Arch, class Step>
void for_batches(int64_t n, const Step& step) {
  constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(i, std::integral_constant<int64_t, lanes>{});
  if (i < n) step(i, n - i);
}

template <class Arch, class T>
void rotate_interleaved(const T* x, T* out, const float* row, int64_t rotary_dim) {
  const float* cos = row;
  const float* sin = row + rotary_dim;
  for_batches<Arch>(rotary_dim, [&](int64_t i, auto n) {
    const auto v = load_floats<Arch>(x + i, n);
    const auto c = load_floats<Arch>(cos + i, n);
    const auto s = load_floats<Arch>(sin + i, n);
    store_floats<Arch>(xsimd::fma(swap_pairs<Arch>(v), s, v * c), out + i, n);
  });
}

template <class Arch, class T>
void rotate_half_split(const T* x, T* out, const float* row, int64_t rotary_dim) {
  const int64_t pairs = rotary_dim / 2;
  const float* cos = row;
  const float* sin = row + pairs;
  for_batches<Arch>(pairs, [&](int64_t j, auto n) {
    const auto a = load_floats<Arch>(x + j, n);
    const auto b = load_floats<Arch>(x + pairs + j, n);
    const auto c = load_floats<Arch>(cos + j, n);
    const auto s = load_floats<Arch>(sin + j, n);
    store_floats<Arch>(xsimd::fms(a, c, b * s), out + j, n);
    store_floats<Arch>(xsimd::fma(a, s, b * c), out + pairs + j, n);
  });
}

template <class Arch, class T, posenc_rope_pairing Pairing>
void rope_rotate(const T* x, T* out, int64_t count, int64_t stride, const float* rows,
                 int64_t row_stride, int64_t rotary_dim, int64_t dim) {
  for (int64_t r = 0; r < count; ++r) {
    const T* xr = x + r * stride;
    T* outr = out + r * stride;
    const float* row = rows + r * row_stride;
    if (Pairing == POSENC_ROPE_INTERLEAVED) {
      rotate_interleaved<Arch>(xr, outr, row, rotary_dim);
    } else {
      rotate_half_split<Arch>(xr, outr, row, rotary_dim);
    }
    if (outr != xr && dim > rotary_dim) {
      std::memcpy(outr + rotary_dim, xr + rotary_dim, size_t(dim - rotary_dim) * sizeof(T));
    }
  }
}

template <class Arch>
constexpr RopeKernels make_rope_kernels() {
  return RopeKernels{&rope_rotate<Arch, float, POSENC_ROPE_INTERLEAVED>,
                     &rope_rotate<Arch, float, POSENC_ROPE_HALF_SPLIT>,
                     &rope_rotate<Arch, uint16_t, POSENC_ROPE_INTERLEAVED>,
                     &rope_rotate<Arch, uint16_t, POSENC_ROPE_HALF_SPLIT>};
}

}  // namespace posenc::kernels
