// posenc check: the cases tagged "check" on every runnable ISA path against
// the reference loops. A case the CPU cannot run is reported as skipped.
#include <cstdio>

#include "cases/table.hpp"
#include "commands.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {

int run_check(int, char**) {
  using cases::Size;
  const std::vector<cases::Case> checks = cases::select(cases::all_cases(), "check", "");
  const cases::ColumnWidths widths = cases::column_widths(checks, Size::test);
  int failures = 0, passes = 0, skips = 0;
  std::printf("%s", cases::check_header(widths).c_str());
  for (posenc_isa isa : runnable_isas()) {
    const Context context{Isa(isa)};
    for (const cases::Case& c : checks) {
      const cases::Checked checked =
          cases::check_problem(c.make(Size::test), c.tolerance, context.get());
      checked.passed() ? ++passes : checked.skipped() ? ++skips : ++failures;
      std::printf("%s",
                  cases::check_row(c, Size::test, posenc_isa_name(isa), checked, widths).c_str());
    }
  }
  std::printf("\n%d passed, %d failed, %d skipped\n", passes, failures, skips);
  return failures == 0 ? 0 : 1;
}

}  // namespace posenc::cli
