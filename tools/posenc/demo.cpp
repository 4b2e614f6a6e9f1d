// posenc demo: each op family on built-in inputs: its checks against the
// reference loops on the default context, then its cases tagged "demo" timed
// on each ISA path against their baselines.
#include <cstdio>
#include <string>

#include "cases/table.hpp"
#include "cases/timing/machine.hpp"
#include "commands.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {
namespace {

using cases::Case;
using cases::Size;

void print_sinusoid_corner() {
  std::vector<float> corner(4 * 8);
  check(posenc_sinusoid_table(nullptr, 4, 8, 0, 10000.0, POSENC_SINCOS_INTERLEAVED, POSENC_F32,
                              corner.data()));
  for (int k = 0; k < 4; ++k) {
    std::printf("  P[%d,:] =", k);
    for (int c = 0; c < 8; ++c) std::printf(" %7.4f", corner[size_t(k * 8 + c)]);
    std::printf("\n");
  }
  std::printf("\n");
}

// Prints the family's checks; false if one disagreed with the reference.
bool run_checks(const std::vector<Case>& family) {
  const std::vector<Case> checks = cases::select(family, "check", "");
  const cases::ColumnWidths widths = cases::column_widths(checks, Size::test);
  bool ok = true;
  for (const Case& c : checks) {
    const cases::Checked checked = cases::check_problem(c.make(Size::test), c.tolerance, nullptr);
    ok = ok && (checked.passed() || checked.skipped());
    std::printf("%s", cases::demo_check_row(c, Size::test, checked, widths).c_str());
  }
  return ok;
}

void run_timed(const std::vector<Case>& family) {
  const std::vector<Case> timed = cases::select(family, "demo", "");
  if (timed.empty()) return;
  const cases::ColumnWidths widths = cases::column_widths(timed, Size::full);
  std::printf("%s", cases::demo_header(widths).c_str());
  for (const Case& c : timed) {
    const cases::Problem problem = c.make(Size::full);
    const double baseline = problem.baseline ? cases::median_seconds(problem.baseline, 3) : 0.0;
    for (posenc_isa isa : runnable_isas()) {
      const Context context{Isa(isa)};
      const cases::Timed t = cases::time_problem(problem, context.get(), 5);
      std::printf("%s", cases::demo_row(c, posenc_isa_name(isa), t, baseline, widths).c_str());
    }
  }
}

}  // namespace

int run_demo(int, char**) {
  std::printf("posenc %s demo on built-in inputs; ISA paths:", posenc_version());
  for (posenc_isa isa : runnable_isas()) std::printf(" %s", posenc_isa_name(isa));
  std::printf("\n");
  bool ok = true;
  for (const cases::Family& family : cases::families()) {
    std::printf("\n== %s ==\n", family.title);
    if (std::string(family.name) == "absolute") print_sinusoid_corner();
    const std::vector<Case> family_cases = family.cases();
    ok = run_checks(family_cases) && ok;
    run_timed(family_cases);
  }
  std::printf("\n%s\n", ok ? "all results agree with the reference loops"
                           : "SOME RESULTS DISAGREE WITH THE REFERENCE LOOPS");
  return ok ? 0 : 1;
}

}  // namespace posenc::cli
