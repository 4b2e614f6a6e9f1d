#include "ops/bias/dense_bias.hpp"

#include <algorithm>

#include "ops/bias/bias_rows.hpp"
#include "ops/stream_output.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/parallel.hpp"
#include "runtime/store_fence.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {

void position_bias(const ExecContext& ctx, const posenc_position_bias_desc& desc,
                   const float* table, float* out) {
  // The 2D table's entries, T5's lines, ALiBi's slopes: before the region
  // (runtime/parallel.hpp), in the calling thread's kept buffer where they
  // fit its limit, so a repeated call allocates nothing.
  const CallScratch<float, struct PreparedTag> prepared(size_t(BiasRows::prepared_floats(desc)),
                                                        ctx.num_threads);
  const BiasRows rows(desc, table, prepared.get());
  const int64_t count = desc.heads * desc.q_len, width = desc.kv_len;
  const bool stream = stream_output(count * width * int64_t(sizeof(float)));
  constexpr int64_t kRowsPerTask = 16;
  parallel_for(ctx.num_threads, ceil_div(count, kRowsPerTask), [&](int64_t task) {
    const int64_t end = std::min(count, (task + 1) * kRowsPerTask);
    for (int64_t r = task * kRowsPerTask; r < end; ++r) {
      rows.write_row(*ctx.kernels, stream, r / desc.q_len, r % desc.q_len, out + r * width);
    }
    if (stream) store_fence();
  });
}

}  // namespace posenc::ops
