// posenc: command-line front end of the library.
#include <cstdio>
#include <cstring>
#include <exception>

#include "arguments.hpp"
#include "commands.hpp"

namespace {

void print_usage(std::FILE* to) {
  std::fputs(
      "usage: posenc <command> [options]\n"
      "\n"
      "commands:\n"
      "  info    the CPU's ISA paths, the path in use and why, oneDNN, threads\n"
      "  demo    runs every op family on built-in inputs on each ISA path and\n"
      "          compares it with the reference loops and the naive way\n"
      "  check   self-test: every op on every ISA path against the reference\n"
      "  bench   op x shape x ISA table against the machine's GEMM rate and\n"
      "          copy bandwidth measured in the same run [--json] [--isa NAME]\n"
      "          [--filter TEXT[,TEXT...]] [--tag bench|demo|check] [--repeats N]\n"
      "  viz     writes PNG figures: the sinusoid table, cosine similarity of\n"
      "          positions, relative logits, the 2D relative bias (see viz --help)\n"
      "\n"
      "environment: POSENC_MAX_ISA=avx512|avx2|baseline|neon caps posenc and\n"
      "oneDNN; OMP_NUM_THREADS sets the default thread count.\n",
      to);
}

using Command = int (*)(int argc, char** argv);

Command find_command(const char* name) {
  if (std::strcmp(name, "info") == 0) return posenc::cli::run_info;
  if (std::strcmp(name, "demo") == 0) return posenc::cli::run_demo;
  if (std::strcmp(name, "check") == 0) return posenc::cli::run_check;
  if (std::strcmp(name, "bench") == 0) return posenc::cli::run_bench;
  if (std::strcmp(name, "viz") == 0) return posenc::cli::run_viz;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* name = argv[1];
  const Command command = find_command(name);
  if (command == nullptr) {
    std::fprintf(stderr, "posenc: unknown command '%s'\n\n", name);
    print_usage(stderr);
    return 2;
  }
  // A bad argument ends the command with status 2; a failure it does not
  // handle itself (posenc::Error names the function and the argument) with
  // status 1; both print the message, neither aborts.
  try {
    return command(argc - 1, argv + 1);
  } catch (const posenc::cli::BadArgument& e) {
    std::fprintf(stderr, "posenc %s: %s\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "posenc %s: %s\n", name, e.what());
    return 1;
  }
}
