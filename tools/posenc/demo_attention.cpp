// Demo of the fused attention: checked against the reference loops, then the
// 2D cases timed on each ISA path against the unfused way (materialized
// scores, pad/reshape skew, softmax, GEMM) and bf16 against fp32.
#include <cstdio>

#include "checks.hpp"
#include "demo.hpp"

namespace posenc::cli {

bool demo_attention() {
  std::printf("\n== attention: softmax(scale q k^T + relative bias) v, blocks in cache ==\n");
  const bool ok = demo_checks(attention_checks());
  demo_cases({"attention_2d_f32", "attention_2d_bf16"});
  return ok;
}

}  // namespace posenc::cli
