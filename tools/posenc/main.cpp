// posenc: command-line front end of the library.
#include <cstdio>
#include <cstring>

#include "commands.hpp"

namespace {

void print_usage() {
  std::puts(
      "usage: posenc <command> [options]\n"
      "\n"
      "commands:\n"
      "  info    the CPU's ISA paths, the path in use and why, oneDNN, threads\n"
      "  demo    runs every op family on built-in inputs on each ISA path and\n"
      "          compares it with the reference loops and the naive way\n"
      "  check   self-test: every op on every ISA path against the reference\n"
      "  bench   op x shape x ISA table against the machine's GEMM rate and\n"
      "          copy bandwidth measured in the same run [--json] [--isa NAME]\n"
      "          [--filter TEXT] [--repeats N]\n"
      "  viz     writes PNG figures: the sinusoid table, cosine similarity of\n"
      "          positions, relative logits, the 2D relative bias (see viz --help)\n"
      "\n"
      "environment: POSENC_MAX_ISA=avx512|avx2|baseline|neon caps posenc and\n"
      "oneDNN; OMP_NUM_THREADS sets the default thread count.");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const char* command = argv[1];
  if (std::strcmp(command, "info") == 0) return posenc::cli::run_info(argc - 1, argv + 1);
  if (std::strcmp(command, "demo") == 0) return posenc::cli::run_demo(argc - 1, argv + 1);
  if (std::strcmp(command, "check") == 0) return posenc::cli::run_check(argc - 1, argv + 1);
  if (std::strcmp(command, "bench") == 0) return posenc::cli::run_bench(argc - 1, argv + 1);
  if (std::strcmp(command, "viz") == 0) return posenc::cli::run_viz(argc - 1, argv + 1);
  std::fprintf(stderr, "posenc: unknown command '%s'\n\n", command);
  print_usage();
  return 2;
}
