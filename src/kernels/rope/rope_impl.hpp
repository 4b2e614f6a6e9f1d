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
#include "kernels/elementwise/partial_batch_impl.hpp"
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

// Values [i, i + count) of an INTERLEAVED row (count lanes with kPartial,
// else a batch's; count even: whole pairs).
template <class Arch, bool kPartial, class T>
POSENC_BATCH_INLINE void interleaved_step(const T* x, T* out, const float* cos, const float* sin,
                                          int64_t i, int64_t count) {
  const auto v = load_values<Arch, kPartial>(x + i, count);
  const auto c = load_values<Arch, kPartial>(cos + i, count);
  const auto s = load_values<Arch, kPartial>(sin + i, count);
  store_values<Arch, kPartial>(fused_multiply_add<Arch>(swap_pairs<Arch>(v), s, v * c), out + i,
                               count);
}

// Full batches, then a tail of fewer pairs by partial loads and stores.
// Every pointer is passed by value, so the compiler keeps them in registers
// across the stores to out.
template <class Arch, class T>
void rotate_interleaved(const T* x, T* out, const float* row, int64_t rotary_dim) {
  constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
  const float* cos = row;
  const float* sin = row + rotary_dim;
  int64_t i = 0;
  for (; i + lanes <= rotary_dim; i += lanes) {
    interleaved_step<Arch, false>(x, out, cos, sin, i, lanes);
  }
  if (i < rotary_dim) interleaved_step<Arch, true>(x, out, cos, sin, i, rotary_dim - i);
}

// Pairs [j, j + count) of a HALF_SPLIT row of `pairs` pairs (count lanes
// with kPartial, else a batch's): the first-half values (Half 0), the
// second-half values (Half 1), or both (Half 2).
template <class Arch, int Half, bool kPartial, class T>
POSENC_BATCH_INLINE void half_split_step(const T* x, T* out, const float* cos, const float* sin,
                                         int64_t pairs, int64_t j, int64_t count) {
  using batch = xsimd::batch<float, Arch>;
  const batch a = load_values<Arch, kPartial>(x + j, count);
  const batch b = load_values<Arch, kPartial>(x + pairs + j, count);
  const batch c = load_values<Arch, kPartial>(cos + j, count);
  const batch s = load_values<Arch, kPartial>(sin + j, count);
  if (Half != 1) {
    store_values<Arch, kPartial>(fused_multiply_add<Arch>(a, c, -(b * s)), out + j, count);
  }
  if (Half != 0) {
    store_values<Arch, kPartial>(fused_multiply_add<Arch>(a, s, b * c), out + pairs + j, count);
  }
}

template <class Arch, class T>
void rotate_half_split(const T* x, T* out, const float* row, int64_t rotary_dim) {
  constexpr int64_t lanes = xsimd::batch<float, Arch>::size;
  const int64_t pairs = rotary_dim / 2;
  const float* cos = row;
  const float* sin = row + pairs;
  int64_t j = 0;
  if (out != x) {  // each half in order: the stores stream through memory
    for (; j + lanes <= pairs; j += lanes) {
      half_split_step<Arch, 0, false>(x, out, cos, sin, pairs, j, lanes);
    }
    for (j = 0; j + lanes <= pairs; j += lanes) {
      half_split_step<Arch, 1, false>(x, out, cos, sin, pairs, j, lanes);
    }
  } else {
    for (; j + lanes <= pairs; j += lanes) {
      half_split_step<Arch, 2, false>(x, out, cos, sin, pairs, j, lanes);
    }
  }
  if (j < pairs) half_split_step<Arch, 2, true>(x, out, cos, sin, pairs, j, pairs - j);
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
