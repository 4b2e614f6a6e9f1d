// Position-bias kernels, templated on the xsimd arch.
#pragma once

#include <cstdint>
#include <cstdlib>

#include <xsimd/xsimd.hpp>

#include "kernels/bias/position_bias_kernels.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"
#include "kernels/elementwise/stream_store_impl.hpp"

namespace posenc::kernels {

template <class Arch, bool Stream>
void alibi_row(float slope, bool bidirectional, int64_t d0, int64_t count, float* out) {
  // One value (the tails, and distances past int32): an integer converts to
  // the same float from int64 as from int32.
  const auto at = [&](int64_t c) {
    const int64_t d = d0 + c;
    return slope * float(bidirectional ? -std::llabs(d) : d);
  };
  if (!alibi_distances_fit_int32(d0, count)) {
    for (int64_t c = 0; c < count; ++c) out[c] = at(c);
    return;
  }
  using batch = xsimd::batch<float, Arch>;
  using ibatch = xsimd::batch<int32_t, Arch>;
  alignas(64) static constexpr int32_t kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
  static_assert(ibatch::size <= 16);
  const ibatch first = ibatch(int32_t(d0)) + ibatch::load_aligned(kLane);
  const batch s(slope);
  write_floats<Arch, Stream>(
      out, count,
      [&](int64_t c) {
        const ibatch d = first + ibatch(int32_t(c));
        return s * xsimd::to_float(bidirectional ? xsimd::min(d, -d) : d);
      },
      at);
}

template <class Arch>
void copy_runs(const float* from, int64_t stride, int64_t runs, int64_t length, float* out) {
  using batch = xsimd::batch<float, Arch>;
  constexpr int64_t lanes = batch::size;
  for (int64_t r = 0; r < runs; ++r) {
    const float* src = from + r * stride;
    float* dst = out + r * length;
    if (length < lanes) {  // a run narrower than a batch (Swin's 7 columns)
      store_partial<Arch>(load_partial<Arch>(src, length, 0.0f), dst, length);
      continue;
    }
    int64_t c = 0;
    for (; c + lanes <= length; c += lanes) batch::load_unaligned(src + c).store_unaligned(dst + c);
    // The tail as one more batch ending at the run's end (it copies a few
    // values again).
    if (c < length) {
      batch::load_unaligned(src + length - lanes).store_unaligned(dst + length - lanes);
    }
  }
}

template <class Arch>
constexpr PositionBiasKernels make_position_bias_kernels() {
  return PositionBiasKernels{&alibi_row<Arch, false>, &alibi_row<Arch, true>, &copy_runs<Arch>};
}

}  // namespace posenc::kernels
