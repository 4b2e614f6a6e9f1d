// Bad command-line arguments of the posenc commands. Each error names the
// argument; main prints it and exits with status 2, before any work is done.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace posenc::cli {

struct BadArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// text as a decimal integer in [lo, hi]; otherwise BadArgument naming option.
int64_t parse_int(const std::string& option, const std::string& text, int64_t lo, int64_t hi);

// "--name=value" as {"--name", "value"}; nothing for any other argument
// (the commands also take "--name value" as two).
std::optional<std::pair<std::string, std::string>> joined_option(const std::string& arg);

// Whether argv[i + 1] can be the value of the option argv[i]: it is there and
// is not an option ("--out --prefix=x" lacks --out's value; "--out=--x" names
// such a folder).
bool value_follows(int argc, char** argv, int i);

// Throws BadArgument unless POSENC_MAX_ISA is unset, empty or a name the
// library takes: the library only warns about a bad name and runs uncapped,
// so a mistyped cap would let `posenc check` pass on paths it was meant to
// leave out. Each command calls it once its arguments are read and it is not
// asked for help (help is given whatever the cap says).
void require_known_isa_cap();

}  // namespace posenc::cli
