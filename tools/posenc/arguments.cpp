#include "arguments.hpp"

#include <cerrno>
#include <cstdlib>

namespace posenc::cli {

int64_t parse_int(const std::string& option, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < lo || value > hi) {
    throw BadArgument(option + ": expected an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got '" + text + "'");
  }
  return value;
}

void require_no_arguments(int argc, char** argv) {
  if (argc > 1)
    throw BadArgument("unexpected argument '" + std::string(argv[1]) + "' (none taken)");
}

}  // namespace posenc::cli
