// Position-bias kernels, templated on the xsimd arch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include <xsimd/xsimd.hpp>

#include "kernels/bias/position_bias_kernels.hpp"
#include "kernels/elementwise/fused_multiply_add_impl.hpp"
#include "kernels/elementwise/partial_batch_impl.hpp"
#include "kernels/elementwise/running_max_impl.hpp"
#include "kernels/elementwise/stream_store_impl.hpp"

namespace posenc::kernels {

// ALiBi's distances d0 + c, or -|d0 + c| bidirectional, as floats, of
// columns c < n: in int32 vector arithmetic where they fit
// (alibi_distances_fit_int32), else one by one from int64 (an integer
// converts to the same float from either).
template <class Arch>
class AlibiDistances {
 public:
  using batch = xsimd::batch<float, Arch>;
  using ibatch = xsimd::batch<int32_t, Arch>;
  static constexpr int64_t lanes = batch::size;

  AlibiDistances(bool bidirectional, int64_t d0, int64_t n)
      : bidirectional_(bidirectional), fits_int32_(alibi_distances_fit_int32(d0, n)), d0_(d0) {
    alignas(64) static constexpr int32_t kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                      8, 9, 10, 11, 12, 13, 14, 15};
    static_assert(lanes <= 16);
    first_ = ibatch(int32_t(d0)) + ibatch::load_aligned(kLane);  // (unused past int32)
  }

  float value(int64_t c) const {
    const int64_t d = d0_ + c;
    return float(bidirectional_ ? -std::llabs(d) : d);
  }

  // The distances of columns [c, c + count), count <= lanes; 0 in the
  // lanes past count.
  batch at_columns(int64_t c, int64_t count = lanes) const {
    if (fits_int32_ && count == lanes) {
      const ibatch d = first_ + ibatch(int32_t(c));
      return xsimd::to_float(bidirectional_ ? xsimd::min(d, -d) : d);
    }
    alignas(64) float d[lanes];
    for (int64_t l = 0; l < lanes; ++l) d[l] = l < count ? value(c + l) : 0.0f;
    return batch::load_aligned(d);
  }

 private:
  bool bidirectional_, fits_int32_;
  int64_t d0_;
  ibatch first_;
};

template <class Arch, bool Stream>
void alibi_row(float slope, bool bidirectional, int64_t d0, int64_t count, float* out) {
  const AlibiDistances<Arch> distances(bidirectional, d0, count);
  const xsimd::batch<float, Arch> s(slope);
  write_floats<Arch, Stream>(
      out, count, [&](int64_t c) { return s * distances.at_columns(c); },
      [&](int64_t c) { return slope * distances.value(c); });
}

// One fused_multiply_add per score, the tail's too, so that a distance gets the
// same bits in any column and on either side of int32's limits.
template <class Arch>
float add_alibi_row(float slope, bool bidirectional, int64_t d0, float* scores, int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  const AlibiDistances<Arch> distances(bidirectional, d0, n);
  const batch s(slope);
  const auto add_at = [&](int64_t c) {
    const batch v =
        fused_multiply_add<Arch>(s, distances.at_columns(c), batch::load_unaligned(scores + c));
    v.store_unaligned(scores + c);
    return v;
  };
  RunningMax<Arch> m;
  const int64_t c = see_whole_batches<Arch>(n, add_at, m);
  if (c < n) {  // the lanes below n - c seen one by one (an infinite slope
                // would make the others NaN)
    const batch v = fused_multiply_add<Arch>(s, distances.at_columns(c, n - c),
                                             load_partial<Arch>(scores + c, n - c, 0.0f));
    store_partial<Arch>(v, scores + c, n - c);
    for (int64_t j = c; j < n; ++j) m.see(scores[j]);
  }
  return m.value();
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

// Whole batches of each run, then its tail one by one, the maximum tracked
// throughout. (Masked tails were slower even on AVX-512: a 2-core Zen 5's
// 24x24 and 40x40 windows 5-9%, the next run's loads waiting on them.)
template <class Arch>
float add_runs(const float* from, int64_t stride, int64_t column, int64_t length, float* scores,
               int64_t n) {
  using batch = xsimd::batch<float, Arch>;
  RunningMax<Arch> m;
  for (int64_t t = 0, c = 0, x = column; c < n; ++t, x = 0) {  // run t from column x
    const int64_t run = std::min(length - x, n - c);
    const float* src = from + t * stride + x;
    float* dst = scores + c;
    const auto bias = [src](int64_t j) { return batch::load_unaligned(src + j); };
    for (int64_t j = add_whole_batches<Arch>(dst, run, bias, m); j < run; ++j) {
      dst[j] += src[j];
      m.see(dst[j]);
    }
    c += run;
  }
  return m.value();
}

// copy_runs with non-temporal stores: a run's ends would share lines with
// its neighbours', so the runs are copied into a stage in the L1 cache and
// streamed from there (stream_through_stage). With batches narrower than
// 16 floats, or without non-temporal stores, this is copy_runs: the stage's
// extra pass then costs more than streaming saves (Swin's 24x24 windows, 48
// heads, one Zen 5 core, of memset's rate with ordinary stores, then staged:
// AVX2 76-79%, 74-77%; SSE2 71-74%, 48%; AVX-512 68-75%, 78-85%).
template <class Arch>
void copy_runs_stream(const float* from, int64_t stride, int64_t runs, int64_t length,
                      float* out) {
  if constexpr (!kNonTemporalStores || xsimd::batch<float, Arch>::size < 16) {
    copy_runs<Arch>(from, stride, runs, length, out);
  } else {
    stream_through_stage<Arch>(
        runs, length, out, [&](int64_t r, int64_t count, int64_t c, int64_t part, float* stage) {
          copy_runs<Arch>(from + r * stride + c, stride, count, part, stage);
        });
  }
}

template <class Arch>
constexpr PositionBiasKernels make_position_bias_kernels() {
  return PositionBiasKernels{&alibi_row<Arch, false>, &alibi_row<Arch, true>, &add_alibi_row<Arch>,
                             &copy_runs<Arch>, &copy_runs_stream<Arch>, &add_runs<Arch>};
}

}  // namespace posenc::kernels
