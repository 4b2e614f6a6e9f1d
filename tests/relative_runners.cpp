// Relative and absolute position logits as runners for the concurrency and
// determinism tests.
#include <gtest/gtest.h>

#include "compare.hpp"
#include "op_runners.hpp"

namespace posenc::test {

std::vector<OpRunner> relative_runners() {
  static const std::vector<float> q = random_floats(2 * 4 * 70 * 40, 41);
  static const std::vector<float> table = random_floats(4 * 139 * 40, 42);
  static const std::vector<float> skewed = random_floats(2 * 4 * 70 * 139, 43);
  return {
      {"absolute_logits",
       [](posenc_context* ctx) {
         std::vector<float> out(2 * 4 * 70 * 70);
         EXPECT_EQ(posenc_absolute_logits(ctx, 2, 4, 70, 70, 40, q.data(), table.data(), 4,
                                          out.data()),
                   POSENC_OK);
         return out;
       }},
      {"rel_to_abs",
       [](posenc_context* ctx) {
         std::vector<float> out(2 * 4 * 70 * 70);
         EXPECT_EQ(posenc_rel_to_abs(ctx, 2, 4, 70, skewed.data(), out.data()), POSENC_OK);
         return out;
       }},
      {"relative_logits_1d clipped causal",
       [](posenc_context* ctx) {
         const posenc_relative_options options{3, 20, 1};
         std::vector<float> out(2 * 4 * 70 * 70);
         EXPECT_EQ(posenc_relative_logits_1d(ctx, 2, 4, 70, 70, 40, q.data(), table.data(), 4,
                                             &options, out.data()),
                   POSENC_OK);
         return out;
       }},
      {"relative_logits_2d per head",
       [](posenc_context* ctx) {
         // 7x10 map: Rh of 13 rows and Rw of 19 rows per head, from `table`.
         std::vector<float> out(2 * 4 * 70 * 70);
         EXPECT_EQ(posenc_relative_logits_2d(ctx, 2, 4, 7, 10, 40, q.data(), table.data(),
                                             table.data() + 4 * 13 * 40, 4, out.data()),
                   POSENC_OK);
         return out;
       }},
  };
}

}  // namespace posenc::test
