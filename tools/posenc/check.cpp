// posenc check: every op on every runnable ISA path against the reference.
#include <cmath>
#include <cstdio>

#include "checks.hpp"
#include "commands.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {

std::vector<float> signal(size_t count, float phase) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = std::sin(0.61f * float(i) + phase);
  return values;
}

double max_abs_error(const float* got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= worst)) worst = err;  // NaN sticks
  }
  return worst;
}

int run_check(int, char**) {
  std::vector<Check> checks;
  for (auto family : {absolute_checks, attention_checks, relative_checks, rope_checks}) {
    for (Check& c : family()) checks.push_back(std::move(c));
  }
  int failures = 0, passes = 0;
  std::printf("%-34s %-9s %12s %12s  %s\n", "check", "isa", "max error", "tolerance", "result");
  for (posenc_isa isa : runnable_isas()) {
    const Context context{Isa(isa)};
    for (const Check& check : checks) {
      try {
        const CheckResult r = check.run(context.get());
        const bool ok = r.max_error <= r.tolerance;
        ok ? ++passes : ++failures;
        std::printf("%-34s %-9s %12.3g %12.3g  %s\n", check.name.c_str(), posenc_isa_name(isa),
                    r.max_error, r.tolerance, ok ? "pass" : "FAIL");
      } catch (const std::exception& e) {
        ++failures;
        std::printf("%-34s %-9s  FAIL: %s\n", check.name.c_str(), posenc_isa_name(isa), e.what());
      }
    }
  }
  std::printf("\n%d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace posenc::cli
