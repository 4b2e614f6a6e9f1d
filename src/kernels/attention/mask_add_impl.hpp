// The additive attention mask's kernel: one row of the mask (fp32, or bf16
// widened on the fly), and optionally a row of position bias, added to a row
// of scores with the row's maximum tracked in the same pass, templated on
// the xsimd arch.
#pragma once

#include <cstdint>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise/bf16_impl.hpp"
#include "kernels/elementwise/fused_multiply_add_impl.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"
#include "kernels/elementwise/running_max_impl.hpp"

namespace posenc::kernels {

// scores[j] = fma(mask[j], alpha, scores[j] + bias[j]) for j < n, or
// without the sum when bias is null (fused_multiply_add, as
// AttentionBiasKernels::add_mask_f32 says; -inf in the mask gives -inf);
// returns the largest new score (-inf for n = 0; a NaN may or may not win).
template <class Arch, class Mask, bool WithBias>
float add_mask_to(const Mask* mask, float alpha, const float* bias, float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  const batch a(alpha);
  const auto add_at = [&](int64_t j) {
    batch x = batch::load_unaligned(scores + j);
    if constexpr (WithBias) x += batch::load_unaligned(bias + j);
    const batch v = fused_multiply_add<Arch>(load_floats<Arch>(mask + j), a, x);
    v.store_unaligned(scores + j);
    return v;
  };
  RunningMax<Arch> m;
  const int64_t j = see_whole_batches<Arch>(n, add_at, m);
  if (j < n) {  // lanes past n: -inf + 0 (+ 0), which no max takes
    batch x = load_partial<Arch>(scores + j, n - j, -std::numeric_limits<float>::infinity());
    if constexpr (WithBias) x += load_partial<Arch>(bias + j, n - j, 0.0f);
    const batch v = fused_multiply_add<Arch>(load_floats_partial<Arch>(mask + j, n - j), a, x);
    store_partial<Arch>(v, scores + j, n - j);
    m.see(v);
  }
  return m.value();
}

template <class Arch, class Mask>
float add_mask(const Mask* mask, float alpha, const float* bias, float* scores, int64_t n) {
  return bias != nullptr ? add_mask_to<Arch, Mask, true>(mask, alpha, bias, scores, n)
                         : add_mask_to<Arch, Mask, false>(mask, alpha, nullptr, scores, n);
}

}  // namespace posenc::kernels
