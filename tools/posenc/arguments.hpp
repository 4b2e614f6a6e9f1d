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

}  // namespace posenc::cli
