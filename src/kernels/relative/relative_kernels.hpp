// Kernels of the relative-position family: the per-row gathers that replace
// the pad/reshape skew, and the broadcast sum of the decomposed 2D logits.
#pragma once

#include <cstdint>

namespace posenc {

struct RelativeKernels {
  // One output row from a row of window logits s[0, n):
  //   out[c] = s[min(max(c + shift, 0), n - 1)]  for 0 <= c < visible,
  //   out[c] = -infinity                          for visible <= c < count.
  // 0 <= visible <= count; n >= 1. Unclipped rows never reach the clamp (a
  // plain copy); clipped rows repeat s[0] and s[n-1] at their ends.
  void (*gather_row)(const float* s, int64_t n, int64_t shift, int64_t visible, float* out,
                     int64_t count);
  // The same with non-temporal stores (where the ISA has them), for outputs
  // far larger than the caches that nothing reads soon: the lines are not
  // read before being written. The caller fences them (runtime/store_fence.hpp).
  void (*gather_row_stream)(const float* s, int64_t n, int64_t shift, int64_t visible,
                            float* out, int64_t count);
  // out[x * w_count + y] = h[x] + w[y] for x < h_count, y < w_count.
  void (*broadcast_sum_row)(const float* h, int64_t h_count, const float* w, int64_t w_count,
                            float* out);
  // The same with non-temporal stores, as gather_row_stream.
  void (*broadcast_sum_row_stream)(const float* h, int64_t h_count, const float* w,
                                   int64_t w_count, float* out);
};

}  // namespace posenc
