// posenc demo: every op family on built-in inputs, on each ISA path.
#include <cstdio>

#include "commands.hpp"
#include "demo.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {

int run_demo(int, char**) {
  std::printf("posenc %s demo on built-in inputs; ISA paths:", posenc_version());
  for (posenc_isa isa : runnable_isas()) std::printf(" %s", posenc_isa_name(isa));
  std::printf("\n");
  bool ok = true;
  ok = demo_absolute() && ok;
  ok = demo_relative() && ok;
  ok = demo_attention() && ok;
  ok = demo_rope() && ok;
  std::printf("\n%s\n", ok ? "all results agree with the reference loops"
                           : "SOME RESULTS DISAGREE WITH THE REFERENCE LOOPS");
  return ok ? 0 : 1;
}

}  // namespace posenc::cli
