// Demo of rotary embeddings: checked against the reference loops, then q and
// k of a 2048-token, 32-head sequence timed on each ISA path against the
// naive rotate-half way.
#include <cstdio>

#include "checks.hpp"
#include "demo.hpp"

namespace posenc::cli {

bool demo_rope() {
  std::printf("\n== rotary embeddings: pairs rotated by position * theta^(-2j/d) ==\n");
  const bool ok = demo_checks(rope_checks());
  demo_cases({"rope_qk"});
  return ok;
}

}  // namespace posenc::cli
