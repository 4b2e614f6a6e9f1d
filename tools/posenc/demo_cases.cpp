// The demo's shared parts: checks with their errors, and benchmark cases
// timed on each ISA path.
#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

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
  std::vector<bench::BenchCase> cases;
  int op_width = 2, shape_width = 5;  // "op", "shape"
  for (bench::BenchCase& c : bench::all_cases()) {
    if (std::find(ops.begin(), ops.end(), c.op) == ops.end()) continue;
    op_width = std::max(op_width, int(c.op.size()));
    shape_width = std::max(shape_width, int(c.shape.size()));
    cases.push_back(std::move(c));
  }
  std::printf("\n  %-*s %-*s %-9s %9s  %s\n", op_width, "op", shape_width, "shape", "isa", "ms",
              "speedup");
  for (const bench::BenchCase& c : cases) {
    const double baseline = c.baseline ? bench::median_seconds(c.baseline, 3) : 0.0;
    for (posenc_isa isa : runnable_isas()) {
      const Context ctx{Isa(isa)};
      const double t = bench::median_seconds([&] { c.run(ctx.get()); }, 5);
      std::printf("  %-*s %-*s %-9s %9.3f", op_width, c.op.c_str(), shape_width, c.shape.c_str(),
                  posenc_isa_name(isa), t * 1e3);
      if (baseline > 0) std::printf("  %.1fx over the %s way", baseline / t, c.baseline_name.c_str());
      std::printf("\n");
    }
  }
}

}  // namespace posenc::cli
