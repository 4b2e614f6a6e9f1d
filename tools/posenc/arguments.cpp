#include "arguments.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "runtime/isa_cap.hpp"

namespace posenc::cli {

int64_t parse_int(const std::string& option, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  // strtoll also takes leading blanks and a '+'; the option takes digits only.
  const bool digits_first =
      !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-');
  if (!digits_first || *end != '\0' || errno != 0 || value < lo || value > hi) {
    throw BadArgument(option + ": expected an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got '" + text + "'");
  }
  return value;
}

std::optional<std::pair<std::string, std::string>> joined_option(const std::string& arg) {
  const size_t equals = arg.find('=');
  if (arg.rfind("--", 0) != 0 || equals == std::string::npos) return std::nullopt;
  return std::make_pair(arg.substr(0, equals), arg.substr(equals + 1));
}

bool value_follows(int argc, char** argv, int i) {
  return i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;
}

void require_known_isa_cap() {
  posenc_isa isa;
  if (environment_isa_cap(&isa) != EnvironmentCap::kUnknown) return;
  throw BadArgument(std::string("POSENC_MAX_ISA=") + std::getenv("POSENC_MAX_ISA") +
                    ": unknown ISA (expected one of " + isa_names() + "; empty or unset: no cap)");
}

}  // namespace posenc::cli
