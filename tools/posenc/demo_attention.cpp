// Demo of the fused attention: checked against the reference loops, then the
// 2D cases timed on each ISA path against the unfused way (materialized
// scores, pad/reshape skew, softmax, GEMM) and bf16 against fp32.
#include <cstdio>

#include "checks.hpp"
#include "demo.hpp"

namespace posenc::cli {

bool demo_attention() {
  std::printf("\n== attention: softmax(scale q k^T + relative bias) v, blocks in cache ==\n");
  bool ok = true;
  for (const Check& check : attention_checks()) {
    const CheckResult r = check.run(nullptr);
    ok = ok && r.max_error <= r.tolerance;
    std::printf("  %-36s max error %.2g (tolerance %.2g)\n", check.name.c_str(), r.max_error,
                r.tolerance);
  }
  demo_cases({"attention_2d_f32", "attention_2d_bf16"});
  return ok;
}

}  // namespace posenc::cli
