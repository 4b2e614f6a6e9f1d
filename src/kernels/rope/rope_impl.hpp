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

#include "kernels/batch_inline.hpp"
#include "kernels/elementwise/bf16_impl.hpp"
#include "kernels/elementwise/fused_multiply_add_impl.hpp"
#include "kernels/rope/rope_kernels.hpp"
#include "posenc/rope.h"

namespace posenc::kernels {

// Swaps the two floats of every 64-bit lane: [x0 x1 x2 x3] -> [x1 x0 x3 x2]
// (a rotate by 32 bits, which every ISA has, unlike a float swizzle; NEON's
// own instruction, as xsimd 8.1 shifts its 64-bit lanes by a call).
template <class Arch>
POSENC_BATCH_INLINE xsimd::batch<float, Arch> swap_pairs(xsimd::batch<float, Arch> v) {
#if XSIMD_WITH_NEON
  if constexpr (std::is_base_of_v<xsimd::neon, Arch>) {
    return vrev64q_f32(v);
  } else
#endif
  {
    using u64 = xsimd::batch<uint64_t, Arch>;
    const u64 bits = xsimd::bitwise_cast<u64>(v);
    return xsimd::bitwise_cast<xsimd::batch<float, Arch>>((bits << 32) | (bits >> 32));
  }
}

// Values [i, i + lanes) of an INTERLEAVED row.
template <class Arch, class T>
POSENC_BATCH_INLINE void interleaved_step(const T* x, T* out, const float* cos, const float* sin,
                                          int64_t i) {
  const auto v = load_floats<Arch>(x + i);
  const auto c = load_floats<Arch>(cos + i);
  const auto s = load_floats<Arch>(sin + i);
  store_floats<Arch>(fused_multiply_add<Arch>(swap_pairs<Arch>(v), s, v * c), out + i);
}

// Pairs [j, j + lanes) of a HALF_SPLIT row of `pairs` pairs: the first-half
// values (Half 0), the second-half values (Half 1), or both (Half 2).
template <class Arch, int Half, class T>
POSENC_BATCH_INLINE void half_split_step(const T* x, T* out, const float* cos, const float* sin,
                                         int64_t pairs, int64_t j) {
  const auto a = load_floats<Arch>(x + j);
  const auto b = load_floats<Arch>(x + pairs + j);
  const auto c = load_floats<Arch>(cos + j);
  const auto s = load_floats<Arch>(sin + j);
  if (Half != 1) store_floats<Arch>(fused_multiply_add<Arch>(a, c, -(b * s)), out + j);
  if (Half != 0) store_floats<Arch>(fused_multiply_add<Arch>(a, s, b * c), out + pairs + j);
}

// Copies n values of `from` to `to`.
template <class Arch, class T>
void copy_values(const T* from, T* to, int64_t n) {
  std::memcpy(to, from, size_t(n) * sizeof(T));
}

// Full batches in place; a tail of n < lanes goes through zero-padded local
// copies. Every pointer is passed by value, so the compiler keeps them in
// registers across the stores to out.
template <class Arch, class T>
void rotate_interleaved(const T* x, T* out, const float* row, int64_t rotary_dim) {
  constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
  const float* cos = row;
  const float* sin = row + rotary_dim;
  int64_t i = 0;
  for (; i + lanes <= rotary_dim; i += lanes) interleaved_step<Arch>(x, out, cos, sin, i);
  if (i == rotary_dim) return;
  const int64_t n = rotary_dim - i;
  alignas(64) T x_tail[lanes] = {};
  alignas(64) T out_tail[lanes];
  alignas(64) float cos_tail[lanes] = {}, sin_tail[lanes] = {};
  copy_values<Arch>(x + i, x_tail, n);
  copy_values<Arch>(cos + i, cos_tail, n);
  copy_values<Arch>(sin + i, sin_tail, n);
  interleaved_step<Arch>(x_tail, out_tail, cos_tail, sin_tail, 0);
  copy_values<Arch>(out_tail, out + i, n);
}

template <class Arch, class T>
void rotate_half_split(const T* x, T* out, const float* row, int64_t rotary_dim) {
  constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
  const int64_t pairs = rotary_dim / 2;
  const float* cos = row;
  const float* sin = row + pairs;
  int64_t j = 0;
  if (out != x) {  // each half in order: the stores stream through memory
    for (; j + lanes <= pairs; j += lanes) half_split_step<Arch, 0>(x, out, cos, sin, pairs, j);
    for (j = 0; j + lanes <= pairs; j += lanes) {
      half_split_step<Arch, 1>(x, out, cos, sin, pairs, j);
    }
  } else {
    for (; j + lanes <= pairs; j += lanes) half_split_step<Arch, 2>(x, out, cos, sin, pairs, j);
  }
  if (j == pairs) return;
  const int64_t n = pairs - j;  // the tail as a row of `lanes` pairs
  alignas(64) T x_tail[2 * lanes] = {};
  alignas(64) T out_tail[2 * lanes];
  alignas(64) float cos_tail[lanes] = {}, sin_tail[lanes] = {};
  copy_values<Arch>(x + j, x_tail, n);
  copy_values<Arch>(x + pairs + j, x_tail + lanes, n);
  copy_values<Arch>(cos + j, cos_tail, n);
  copy_values<Arch>(sin + j, sin_tail, n);
  half_split_step<Arch, 2>(x_tail, out_tail, cos_tail, sin_tail, lanes, 0);
  copy_values<Arch>(out_tail, out + j, n);
  copy_values<Arch>(out_tail + lanes, out + pairs + j, n);
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
