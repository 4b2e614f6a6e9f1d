// Demo of the relative position logits: each op checked against the
// reference loops, then timed on each ISA path against the seeds' way (one
// GEMM to [T, 2T-1], then the pad / flatten / pad / reshape / slice skew).
#include <cstdio>

#include "checks.hpp"
#include "demo.hpp"

namespace posenc::cli {

bool demo_relative() {
  std::printf("\n== relative position logits: a[i,j] = q_i . R[j - i + T - 1], and 2D ==\n");
  const bool ok = demo_checks(relative_checks());
  demo_cases({"rel_to_abs", "relative_logits_1d", "relative_logits_2d_decomposed",
              "relative_logits_2d"});
  return ok;
}

}  // namespace posenc::cli
