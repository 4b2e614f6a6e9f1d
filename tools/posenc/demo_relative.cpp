// Demo of the relative position logits: each op checked against the
// reference loops, then timed on each ISA path against the seeds' way (one
// GEMM to [T, 2T-1], then the pad / flatten / pad / reshape / slice skew).
#include <cstdio>

#include "checks.hpp"
#include "demo.hpp"

namespace posenc::cli {

bool demo_relative() {
  std::printf("\n== relative position logits: a[i,j] = q_i . R[j - i + T - 1], and 2D ==\n");
  bool ok = true;
  for (const Check& check : relative_checks()) {
    const CheckResult r = check.run(nullptr);
    ok = ok && r.max_error <= r.tolerance;
    std::printf("  %-36s max error %.2g (tolerance %.2g)\n", check.name.c_str(), r.max_error,
                r.tolerance);
  }
  demo_cases({"rel_to_abs", "relative_logits_1d", "relative_logits_2d_decomposed",
              "relative_logits_2d"});
  return ok;
}

}  // namespace posenc::cli
