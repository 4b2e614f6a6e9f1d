#include "ops/attention/split_keys.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/math_constants.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {

PartialLayout partial_layout(int64_t query_block, int64_t acc_ld) {
  const size_t rows = size_t(query_block);
  PartialLayout layout{};
  layout.acc = 0;
  layout.row_max = workspace_aligned(rows * size_t(acc_ld) * sizeof(float));
  layout.row_sum = layout.row_max + workspace_aligned(rows * sizeof(float));
  layout.bytes = layout.row_sum + workspace_aligned(rows * sizeof(float));
  return layout;
}

void merge_partials(uint8_t* records, const PartialLayout& layout, int64_t first_task,
                    int64_t splits, int64_t rows, int64_t columns, int64_t acc_ld,
                    float softmax_scale, float* acc, float* row_max, float* row_sum) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    // The ranges that saw a key have a sum: one of 0 saw none, or only -inf
    // scores, and its acc may be unset. A range of NaN scores alone (maximum
    // -inf, sum NaN) makes the row NaN, as without split keys: its weight
    // times its sum is 0 * NaN, or NaN when no range has a finite maximum.
    // (A NaN maximum is kept, std::max would drop it; softmax_block never
    // stores one.)
    float top = neg_inf;
    for (int64_t i = 0; i < splits; ++i) {
      const Partial part = partial_at(records, layout, first_task + i);
      if (part.row_sum[r] == 0.0f) continue;
      const float part_max = part.row_max[r];
      top = part_max != part_max ? part_max : std::max(top, part_max);
    }
    float* out = acc + r * acc_ld;
    std::fill(out, out + columns, 0.0f);
    float sum = 0.0f;
    for (int64_t i = 0; i < splits; ++i) {
      const Partial part = partial_at(records, layout, first_task + i);
      if (part.row_sum[r] == 0.0f) continue;
      // Flushed as the online softmax's corrections are; the top range's is 1.
      float weight = std::exp(softmax_scale * (part.row_max[r] - top));
      if (weight < kMinProbability) weight = 0.0f;
      sum += weight * part.row_sum[r];
      const float* x = part.acc + r * acc_ld;
      for (int64_t c = 0; c < columns; ++c) out[c] += weight * x[c];
    }
    row_max[r] = top;
    row_sum[r] = sum;
  }
}

}  // namespace posenc::ops
