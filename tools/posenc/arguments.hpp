// Bad command-line arguments of the posenc commands. Each error names the
// argument; main prints it and exits with status 2, before any work is done.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace posenc::cli {

struct BadArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// text as a decimal integer in [lo, hi]; otherwise BadArgument naming option.
int64_t parse_int(const std::string& option, const std::string& text, int64_t lo, int64_t hi);

// For the commands that take no arguments. A lone -h or --help prints usage
// to stdout and returns true (the command then exits with status 0); any
// other argument is a BadArgument naming it; none returns false.
bool print_help_or_require_no_arguments(int argc, char** argv, const char* usage);

}  // namespace posenc::cli
