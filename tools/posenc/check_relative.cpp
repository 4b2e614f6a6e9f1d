// Self-checks of the relative and absolute position logits.
#include <cmath>
#include <cstring>
#include <limits>

#include "checks.hpp"
#include "reference/relative.hpp"

namespace posenc::cli {
namespace {

// Like max_abs_error, but masked logits (-inf) must match exactly.
double max_error_with_masks(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      if (double(got[i]) != want[i]) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  }
  return worst;
}

}  // namespace

std::vector<Check> relative_checks() {
  return {
      {"rel_to_abs == pad/reshape, L=65",
       [](posenc_context* ctx) {
         const int64_t length = 65;
         const auto in = signal(size_t(3 * length * (2 * length - 1)), 0.1f);
         std::vector<float> out(size_t(3 * length * length));
         posenc::check(posenc_rel_to_abs(ctx, 1, 3, length, in.data(), out.data()));
         const auto want = reference::pad_reshape_rel_to_abs(3, length, in.data());
         // Bitwise: any differing bit counts as an error of 1.
         return CheckResult{std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) == 0
                                ? 0.0
                                : 1.0,
                            0.0};
       }},
      {"relative_1d T=257 d=80 clip causal",
       [](posenc_context* ctx) {
         const int64_t t = 257, d = 80, clip = 40;
         const auto q = signal(size_t(2 * t * d), 0.2f);
         const auto table = signal(size_t((2 * clip + 1) * d), 0.3f);
         const posenc_relative_options options{5, clip, 1};
         std::vector<float> out(size_t(2 * t * t));
         posenc::check(posenc_relative_logits_1d(ctx, 1, 2, t, t, d, q.data(), table.data(), 1,
                                                 &options, out.data()));
         const auto want = reference::relative_logits_1d(1, 2, t, t, d, q.data(), table.data(),
                                                         1, {5, clip, true});
         return CheckResult{max_error_with_masks(out, want), 2e-4};
       }},
      {"relative_2d 7x5 per head, full",
       [](posenc_context* ctx) {
         const int64_t x = 7, y = 5, d = 64, heads = 2, n = x * y;
         const auto q = signal(size_t(heads * n * d), 0.4f);
         const auto rh = signal(size_t(heads * (2 * x - 1) * d), 0.5f);
         const auto rw = signal(size_t(heads * (2 * y - 1) * d), 0.6f);
         std::vector<float> out(size_t(heads * n * n));
         posenc::check(posenc_relative_logits_2d(ctx, 1, heads, x, y, d, q.data(), rh.data(),
                                                 rw.data(), heads, out.data()));
         return CheckResult{
             max_abs_error(out.data(), reference::relative_logits_2d(1, heads, x, y, d, q.data(),
                                                                     rh.data(), rw.data(), heads)),
             2e-4};
       }},
  };
}

}  // namespace posenc::cli
