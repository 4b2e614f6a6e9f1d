#include "ops/relative/skew.hpp"

#include <algorithm>

#include "ops/stream_output.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/parallel.hpp"
#include "runtime/store_fence.hpp"

namespace posenc::ops {

void rel_to_abs(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t length,
                const float* in, float* out) {
  // out row i is the contiguous slice in[i, length-1-i .. 2*length-2-i]: the
  // pad/reshape sequence moves every value there without arithmetic, so
  // copying it is bit for bit the same.
  const int64_t rows = batch * heads * length;
  const int64_t in_cols = 2 * length - 1;
  constexpr int64_t kRowsPerTask = 16;
  const RelativeKernels& kernels = ctx.kernels->relative;
  const bool stream = stream_output(rows * length * 4);
  const auto gather_row = stream ? kernels.gather_row_stream : kernels.gather_row;
  parallel_for(ctx.num_threads, ceil_div(rows, kRowsPerTask), [&](int64_t task) {
    const int64_t end = std::min(rows, (task + 1) * kRowsPerTask);
    for (int64_t row = task * kRowsPerTask; row < end; ++row) {
      const int64_t i = row % length;
      gather_row(in + row * in_cols, in_cols, length - 1 - i, length, out + row * length,
                 length);
    }
    if (stream) store_fence();
  });
}

}  // namespace posenc::ops
