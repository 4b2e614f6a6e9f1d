// The demo's shared parts: checks with their errors, and benchmark cases
// timed on each ISA path.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "cases/bench_case.hpp"
#include "cases/machine.hpp"
#include "checks.hpp"
#include "demo.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {

bool demo_checks(const std::vector<Check>& checks) {
  bool ok = true;
  for (const Check& check : checks) {
    const CheckResult r = check.run(nullptr);
    ok = ok && r.max_error <= r.tolerance;
    std::printf("  %-36s max error %.2g (tolerance %.2g)\n", check.name.c_str(), r.max_error,
                r.tolerance);
  }
  return ok;
}

void demo_cases(const std::vector<std::string>& ops) {
  bench::CaseList cases;
  for (bench::BenchCase& c : bench::all_cases()) {
    if (std::find(ops.begin(), ops.end(), c.op) != ops.end()) cases.push_back(std::move(c));
  }
  const bench::ColumnWidths widths = bench::column_widths(cases);
  std::printf("\n  %-*s %-*s %-9s %9s  %s\n", widths.op, "op", widths.shape, "shape", "isa",
              "ms", "speedup");
  for (const bench::BenchCase& c : cases) {
    const double baseline = c.baseline ? bench::median_seconds(c.baseline, 3) : 0.0;
    for (posenc_isa isa : runnable_isas()) {
      const Context ctx{Isa(isa)};
      const double t = bench::median_seconds([&] { c.run(ctx.get()); }, 5);
      std::printf("  %-*s %-*s %-9s %9.3f", widths.op, c.op.c_str(), widths.shape,
                  c.shape.c_str(), posenc_isa_name(isa), t * 1e3);
      if (baseline > 0) std::printf("  %.1fx over the %s way", baseline / t, c.baseline_name.c_str());
      std::printf("\n");
    }
  }
}

}  // namespace posenc::cli
