// Self-checks of the absolute encodings.
#include <string>

#include "checks.hpp"
#include "reference/absolute.hpp"

namespace posenc::cli {
namespace {

std::vector<float> ramp(size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = float(int(i % 17) - 8) * 0.125f;
  return values;
}

}  // namespace

std::vector<Check> absolute_checks() {
  return {
      {"sinusoid_table 257x65 @99990",
       [](posenc_context* ctx) {
         std::vector<float> out(257 * 65);
         posenc::check(posenc_sinusoid_table(ctx, 257, 65, 99990, 10000.0,
                                             POSENC_SINCOS_INTERLEAVED, POSENC_F32, out.data()));
         return CheckResult{max_abs_error(out.data(), reference::sinusoid_table(
                                                          257, 65, 99990, 10000.0,
                                                          POSENC_SINCOS_INTERLEAVED)),
                            2e-6};
       }},
      {"sinusoid_table_2d 7x5 d=64",
       [](posenc_context* ctx) {
         std::vector<float> out(7 * 5 * 64);
         posenc::check(posenc_sinusoid_table_2d(ctx, 7, 5, 64, 10000.0, POSENC_SINCOS_SPLIT,
                                                POSENC_F32, out.data()));
         return CheckResult{
             max_abs_error(out.data(), reference::sinusoid_table_2d(7, 5, 64, 10000.0,
                                                                    POSENC_SINCOS_SPLIT)),
             2e-6};
       }},
      {"add_sinusoid 3x17x129 @5",
       [](posenc_context* ctx) {
         const std::vector<float> x = ramp(3 * 17 * 129);
         std::vector<float> out(x.size());
         posenc::check(posenc_add_sinusoid(ctx, 3, 17, 129, 5, 10000.0, POSENC_SINCOS_INTERLEAVED,
                                           x.data(), out.data()));
         return CheckResult{
             max_abs_error(out.data(), reference::add_sinusoid(3, 17, 129, 5, 10000.0,
                                                               POSENC_SINCOS_INTERLEAVED,
                                                               x.data())),
             4e-6};
       }},
      {"add_learned 2x13x100 @3",
       [](posenc_context* ctx) {
         const std::vector<float> table = ramp(16 * 100), x = ramp(2 * 13 * 100);
         std::vector<float> out(x.size());
         posenc::check(posenc_add_learned(ctx, 2, 13, 100, 3, table.data(), 16, x.data(),
                                          out.data()));
         return CheckResult{
             max_abs_error(out.data(),
                           reference::add_learned(2, 13, 100, 3, table.data(), x.data())),
             0.0};
       }},
      {"concat_sinusoid 2x7x(5+33)",
       [](posenc_context* ctx) {
         const std::vector<float> x = ramp(2 * 7 * 5);
         std::vector<float> out(2 * 7 * 38);
         posenc::check(posenc_concat_sinusoid(ctx, 2, 7, 5, 33, 0, 10000.0,
                                              POSENC_SINCOS_INTERLEAVED, x.data(), out.data()));
         return CheckResult{
             max_abs_error(out.data(), reference::concat_sinusoid(2, 7, 5, 33, 0, 10000.0,
                                                                  POSENC_SINCOS_INTERLEAVED,
                                                                  x.data())),
             2e-6};
       }},
  };
}

}  // namespace posenc::cli
