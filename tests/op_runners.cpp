#include "op_runners.hpp"

#include <gtest/gtest.h>

#include "compare.hpp"

namespace posenc::test {
namespace {

void expect_ok(posenc_status status) { ASSERT_EQ(status, POSENC_OK) << posenc_last_error(); }

}  // namespace

std::vector<OpRunner> absolute_runners() {
  static const std::vector<float> x = random_floats(4 * 96 * 130, 21);
  static const std::vector<float> table = random_floats(200 * 130, 22);
  return {
      {"sinusoid_table",
       [](posenc_context* ctx) {
         std::vector<float> out(300 * 130);
         expect_ok(posenc_sinusoid_table(ctx, 300, 130, 17, 10000.0, POSENC_SINCOS_SPLIT,
                                         POSENC_F32, out.data()));
         return out;
       }},
      {"sinusoid_table_2d",
       [](posenc_context* ctx) {
         std::vector<float> out(14 * 9 * 64);
         expect_ok(posenc_sinusoid_table_2d(ctx, 14, 9, 64, 10000.0,
                                            POSENC_SINCOS_INTERLEAVED, POSENC_F32, out.data()));
         return out;
       }},
      {"add_sinusoid",
       [](posenc_context* ctx) {
         std::vector<float> out(x.size());
         expect_ok(posenc_add_sinusoid(ctx, 4, 96, 130, 5, 10000.0, POSENC_SINCOS_INTERLEAVED,
                                       x.data(), out.data()));
         return out;
       }},
      {"add_learned",
       [](posenc_context* ctx) {
         std::vector<float> out(x.size());
         expect_ok(posenc_add_learned(ctx, 4, 96, 130, 100, table.data(), 200, x.data(),
                                      out.data()));
         return out;
       }},
      {"concat_sinusoid",
       [](posenc_context* ctx) {
         std::vector<float> out(4 * 96 * 160);
         expect_ok(posenc_concat_sinusoid(ctx, 4, 96, 130, 30, 0, 10000.0,
                                          POSENC_SINCOS_INTERLEAVED, x.data(), out.data()));
         return out;
       }},
  };
}

std::vector<OpRunner> all_runners() {
  std::vector<OpRunner> runners;
  for (auto family :
       {absolute_runners, attention_runners, relative_runners, rope_runners}) {
    for (OpRunner& r : family()) runners.push_back(std::move(r));
  }
  return runners;
}

}  // namespace posenc::test
