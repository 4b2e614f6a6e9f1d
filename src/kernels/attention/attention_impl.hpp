// Attention kernels (softmax, scaling, transposes), templated on the xsimd
// arch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/attention/attention_kernels.hpp"
#include "kernels/attention/decode_products_impl.hpp"
#include "kernels/attention/softmax_exp_impl.hpp"
#include "kernels/attention/transpose_impl.hpp"
#include "kernels/batch_inline.hpp"
#include "kernels/elementwise/bf16_impl.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"
#include "runtime/prefetch.hpp"

namespace posenc::kernels {

// The first `count` lanes of x, as bf16 bits, to out. With finite_only the
// rounding skips the care a NaN needs (NaN payloads could round to -0).
template <class Arch, bool finite_only>
POSENC_BATCH_INLINE void store_bf16(xsimd::batch<float, Arch> x, uint16_t* out, int64_t count) {
  using ubatch = xsimd::batch<uint32_t, Arch>;
  // The bf16 bits in the upper half of each lane.
  const ubatch high =
      finite_only ? bf16_high_bits_of_non_nan<Arch>(x) : bf16_high_bits<Arch>(x);
  if (count == int64_t(ubatch::size)) {
    store_high_halves<Arch>(high, out);
  } else {
    store_high_halves_partial<Arch>(high, out, count);
  }
}

// The exponentials exp(scale (x - shift)) of a row, scale > 0; the lines
// of the next rows are asked for as x's are read.
struct ExpArgs {
  float scale, shift;
  const PrefetchRows& next;
};

// Asks for keys [j, j + count) of each of the next rows, j a multiple of
// count: where that span is under a line, only once a line (at the span
// that starts one, counting from the row's start).
inline void prefetch_keys(const PrefetchRows& next, int64_t j, int64_t count) {
  for (const PrefetchRows::Row& row : next.rows) {
    if (row.data == nullptr) continue;
    const int64_t first = j * row.bytes_per_key, bytes = count * row.bytes_per_key;
    if (first % kCacheLineBytes >= bytes) continue;
    prefetch_bytes(static_cast<const char*>(row.data) + first, bytes);
  }
}

// Calls row(e, j, lanes) with e = exp(scale (x[j..] - shift)) for each batch
// of x[0, n) (the tail padded with -inf, whose exp is 0, and `lanes` then the
// valid count), or pair(e0, e1, j) for two whole batches at j and j + lanes
// where the loop takes two at once; returns the sum of the exponentials. The
// tail goes first, so that its latency hides behind the whole batches (rows
// are short: 196 keys for a 14 x 14 map); two sums, so that no iteration
// waits on the last add. Prefetching the next rows here, where the exp's
// arithmetic leaves the loads idle, spares the pass that reads them next
// (the attention's bias, mask and maximum) a wait on L2 or memory.
template <class Arch, ExpPrecision precision, class Row, class Pair>
float for_each_exp(const float* x, int64_t n, ExpArgs a, const Row& row, const Pair& pair) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  // (x - shift) first: x = shift gives exactly 0 even for huge scores (an
  // fma with -scale * shift would leave its rounding error, times 1e30).
  const ScaledExp<Arch, precision> exp(a.scale);
  const batch shift(a.shift);
  batch sum0(0.0f), sum1(0.0f);
  const int64_t whole = n - n % lanes;
  if (whole < n) {
    const batch tail =
        load_partial<Arch>(x + whole, n - whole, -std::numeric_limits<float>::infinity());
    sum1 = exp(tail - shift);
    row(sum1, whole, n - whole);
  }
  int64_t j = 0;
  for (; j + 2 * lanes <= whole; j += 2 * lanes) {
    prefetch_keys(a.next, j, 2 * lanes);
    const batch e0 = exp(batch::load_unaligned(x + j) - shift);
    const batch e1 = exp(batch::load_unaligned(x + j + lanes) - shift);
    pair(e0, e1, j);
    sum0 += e0;
    sum1 += e1;
  }
  if (j < whole) {
    const batch e = exp(batch::load_unaligned(x + j) - shift);
    row(e, j, lanes);
    sum0 += e;
  }
  return xsimd::hadd(sum0 + sum1);
}

template <class Arch, ExpPrecision precision, class Row>
float for_each_exp(const float* x, int64_t n, ExpArgs a, const Row& row) {
  using batch = xsimd::batch<float, Arch>;
  return for_each_exp<Arch, precision>(x, n, a, row, [&row](batch e0, batch e1, int64_t j) {
    row(e0, j, int64_t(batch::size));
    row(e1, j + int64_t(batch::size), int64_t(batch::size));
  });
}

// x[j] = exp(scale (x[j] - shift)) for j < n; returns their sum.
template <class Arch>
float exp_in_place(float* x, int64_t n, ExpArgs a) {
  using batch = xsimd::batch<float, Arch>;
  return for_each_exp<Arch, ExpPrecision::f32>(x, n, a, [x](batch e, int64_t j, int64_t count) {
    if (count == batch::size) {
      e.store_unaligned(x + j);
    } else {
      store_partial<Arch>(e, x + j, count);
    }
  });
}

// out[j] = bf16(exp(scale (x[j] - shift))) for j < n; returns the sum of the
// fp32 exponentials. The rounding assumes no NaN; a row with one (its sum is
// then NaN) is done again with the rounding that keeps NaN a NaN.
template <class Arch>
float exp_to_bf16(const float* x, int64_t n, ExpArgs a, uint16_t* out) {
  using batch = xsimd::batch<float, Arch>;
  const float sum = for_each_exp<Arch, ExpPrecision::bf16>(
      x, n, a, [out](batch e, int64_t j, int64_t count) {
        store_bf16<Arch, true>(e, out + j, count);
      });
  if (sum == sum) return sum;
  return for_each_exp<Arch, ExpPrecision::bf16>(
      x, n, a, [out](batch e, int64_t j, int64_t count) {
        store_bf16<Arch, false>(e, out + j, count);
      });
}

#if defined(__AVX512BF16__)
// exp_to_bf16 with AVX512-BF16's rounding instructions (to nearest even,
// NaN kept a NaN), two batches at once where it can (one instruction for
// both: half the conversions' micro-ops); compiled only in
// src/arch/avx512_bf16.cpp.
template <class Arch>
float exp_to_bf16_avx512_bf16(const float* x, int64_t n, ExpArgs a, uint16_t* out) {
  using batch = xsimd::batch<float, Arch>;
  return for_each_exp<Arch, ExpPrecision::bf16>(
      x, n, a,
      [out](batch e, int64_t j, int64_t count) {
        const __m256i bits = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(e));
        if (count == batch::size) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), bits);
        } else {
          _mm256_mask_storeu_epi16(out + j, lane_mask_avx512<Arch>(count), bits);
        }
      },
      [out](batch e0, batch e1, int64_t j) {
        // The low half from the second operand.
        _mm512_storeu_si512(out + j, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(e1, e0)));
      });
}
#endif

// One online-softmax step (AttentionKernels::softmax_block), with the bf16
// probabilities written by ExpToBf16.
template <class Arch, float (*ExpToBf16)(const float*, int64_t, ExpArgs, uint16_t*)>
float softmax_block(float* scores, int64_t valid, int64_t n, float block_max, float scale,
                    float* row_max, float* row_sum, uint16_t* probs_bf16,
                    const PrefetchRows& next) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const float old_max = *row_max;
  const float new_max = std::max(old_max, block_max);
  // A row whose visible scores are all -inf so far: shift by 0, so that its
  // probabilities are 0 (not NaN) and later blocks can still carry weight.
  const ExpArgs a{scale, new_max == neg_inf ? 0.0f : new_max, next};
  float sum;
  if (probs_bf16 != nullptr) {
    sum = ExpToBf16(scores, valid, a, probs_bf16);
    std::fill(probs_bf16 + valid, probs_bf16 + n, uint16_t(0));
  } else {
    sum = exp_in_place<Arch>(scores, valid, a);
    std::fill(scores + valid, scores + n, 0.0f);
  }
  // The earlier blocks' weight: flushed below kMinProbability as the
  // probabilities are (the accumulator scaled by less would near FLT_MIN).
  float correction = 1.0f;
  if (old_max != new_max) {
    correction = old_max == neg_inf ? 0.0f : std::exp(scale * (old_max - new_max));
    if (correction < kMinProbability) correction = 0.0f;
  }
  *row_sum = *row_sum * correction + sum;
  *row_max = new_max;
  return correction;
}

// out[j] = x[j] * factor: fp32 (out may equal x; scale_f32), or bf16 rounded
// as posenc_f32_to_bf16 (scale_to_bf16).
template <class Arch, class Out>
void scale_row(const float* x, float factor, Out* out, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  const batch f(factor);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) store_floats<Arch>(batch::load_unaligned(x + j) * f, out + j);
  if (j == n) return;
  const batch tail = load_partial<Arch>(x + j, n - j, 0.0f) * f;
  if constexpr (std::is_same_v<Out, float>) {
    store_partial<Arch>(tail, out + j, n - j);
  } else {
    store_bf16<Arch, false>(tail, out + j, n - j);
  }
}

// The AVX-512 path has a second table (src/arch/avx512.cpp) whose
// softmax_block rounds with AVX512-BF16's instruction (bit for bit as this
// one does) and whose bf16 decode products use its pair dot product
// (decode_pairs_impl.hpp: other sums, and bf16 probabilities).
template <class Arch>
constexpr AttentionKernels make_attention_kernels() {
  return AttentionKernels{&softmax_block<Arch, &exp_to_bf16<Arch>>, &scale_row<Arch, float>,
                          &scale_row<Arch, uint16_t>,
                          &transpose_32<Arch>,
                          &transpose_16<Arch>,
                          &decode_scores<Arch, float>,
                          &decode_scores<Arch, uint16_t>,
                          &decode_values<Arch, float>,
                          &decode_values<Arch, uint16_t>};
}

}  // namespace posenc::kernels
