// posenc: command-line front end of the library.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "arguments.hpp"
#include "commands.hpp"
#include "posenc/core.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  bool takes_arguments;  // if not, main answers -h and --help and refuses anything else
  const char* summary;   // lines, without their indentation
};

constexpr Command kCommands[] = {
    {"info", posenc::cli::run_info, false,
     "the CPU's ISA paths, the path in use and why, oneDNN, threads"},
    {"demo", posenc::cli::run_demo, false,
     "each op family on built-in inputs: its checks against the\n"
     "reference loops, then its cases timed on each ISA path against\n"
     "the naive way"},
    {"check", posenc::cli::run_check, false,
     "self-test: every op on every ISA path against the reference"},
    {"bench", posenc::cli::run_bench, true,
     "op x shape x ISA table against the machine's GEMM rate and\n"
     "copy bandwidth measured in the same run [--json | --phases]\n"
     "[--isa NAME] [--filter TEXT[,TEXT...]] [--tag bench|demo|check]\n"
     "[--repeats N]; --phases: where each row's time goes"},
    {"viz", posenc::cli::run_viz, true,
     "writes PNG figures: the sinusoid table, cosine similarity of\n"
     "positions, relative logits, the 2D relative bias (see viz --help)"},
};

// text, each line after the first preceded by `indent`.
void print_lines(std::FILE* to, const char* text, const char* indent) {
  for (const char* c = text; *c != '\0'; ++c) {
    std::fputc(*c, to);
    if (*c == '\n') std::fputs(indent, to);
  }
  std::fputc('\n', to);
}

void print_usage(std::FILE* to) {
  std::fputs("usage: posenc <command> [options]\n       posenc --version\n\ncommands:\n", to);
  for (const Command& command : kCommands) {
    std::fprintf(to, "  %-7s ", command.name);
    print_lines(to, command.summary, "          ");
  }
  std::fputs(
      "\n"
      "environment: POSENC_MAX_ISA=avx512|avx2|baseline|neon caps posenc and,\n"
      "on x86-64, oneDNN (auto or empty: no cap; another value is refused);\n"
      "OMP_NUM_THREADS sets the default thread count.\n",
      to);
}

bool is_help(const char* argument) {
  return std::strcmp(argument, "-h") == 0 || std::strcmp(argument, "--help") == 0;
}

const Command* find_command(const char* name) {
  for (const Command& command : kCommands) {
    if (std::strcmp(name, command.name) == 0) return &command;
  }
  return nullptr;
}

// status, unless what was printed to stdout did not all reach it (a full
// disk; a closed pipe where SIGPIPE is ignored): then 1, with a message.
int with_stdout_written(const char* command, int status) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  std::fprintf(stderr, "posenc%s%s: cannot write the standard output: %s\n", *command ? " " : "",
               command, std::strerror(errno));
  return 1;
}

int run(int argc, char** argv) {
  if (argc < 2 || is_help(argv[1])) {
    if (argc > 2) {
      std::fprintf(stderr, "posenc %s: unexpected argument '%s' (none taken)\n", argv[1], argv[2]);
      return 2;
    }
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    if (argc > 2) {
      std::fprintf(stderr, "posenc --version: unexpected argument '%s' (none taken)\n", argv[2]);
      return 2;
    }
    std::printf("posenc %s\n", posenc_version());
    return 0;
  }
  const char* name = argv[1];
  const Command* command = find_command(name);
  if (command == nullptr) {
    std::fprintf(stderr, "posenc: unknown command '%s'\n\n", name);
    print_usage(stderr);
    return 2;
  }
  if (!command->takes_arguments && argc > 2) {
    if (argc == 3 && is_help(argv[2])) {
      std::printf("usage: posenc %s\n  ", name);
      print_lines(stdout, command->summary, "  ");
      return 0;
    }
    // The first argument that is not a request for help (info --help extra),
    // else the second request (info --help --help).
    int first = 2;
    while (first < argc && is_help(argv[first])) ++first;
    const char* unexpected = argv[first < argc ? first : 3];
    std::fprintf(stderr, "posenc %s: unexpected argument '%s' (none taken)\n", name, unexpected);
    return 2;
  }
  // A bad argument (or POSENC_MAX_ISA) ends the command with status 2; a
  // failure it does not handle itself (posenc::Error names the function and
  // the argument) with status 1; both print the message, neither aborts.
  try {
    if (!command->takes_arguments) posenc::cli::require_known_isa_cap();
    return command->run(argc - 1, argv + 1);
  } catch (const posenc::cli::BadArgument& e) {
    std::fprintf(stderr, "posenc %s: %s\n", name, e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "posenc %s: out of memory for the sizes asked for\n", name);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "posenc %s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A line at a time, also into a pipe or file: a run cut short (a time
  // limit, a crash) keeps the rows it measured.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int status = run(argc, argv);
  return with_stdout_written(argc >= 2 && find_command(argv[1]) ? argv[1] : "", status);
}
