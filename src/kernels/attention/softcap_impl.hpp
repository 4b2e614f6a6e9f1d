// The logit soft cap (Gemma 2's attn_logit_softcapping) over a row of
// scores, templated on the xsimd arch.
#pragma once

#include <cstdint>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise/partial_batch_impl.hpp"
#include "kernels/elementwise/running_max_impl.hpp"

namespace posenc::kernels {

// scores[j] = outer tanh(inner scores[j]) for j < n (xsimd's tanh, within a
// few ulp); returns the largest new score (-inf for n = 0; a NaN may or may
// not win).
template <class Arch>
float softcap(float* scores, int64_t n, float inner, float outer) {
  using batch = xsimd::batch<float, Arch>;
  const batch a(inner), b(outer);
  const auto cap_at = [&](int64_t j) {
    const batch v = xsimd::tanh(batch::load_unaligned(scores + j) * a) * b;
    v.store_unaligned(scores + j);
    return v;
  };
  RunningMax<Arch> m;
  const int64_t j = see_whole_batches<Arch>(n, cap_at, m);
  if (j < n) {  // lanes past n: -outer, no more than any capped score
    const batch x = load_partial<Arch>(scores + j, n - j, -std::numeric_limits<float>::infinity());
    const batch v = xsimd::tanh(x * a) * b;
    store_partial<Arch>(v, scores + j, n - j);
    m.see(v);
  }
  return m.value();
}

}  // namespace posenc::kernels
