// posenc_bench: the cases tagged "bench" (cases/) on every runnable ISA path
// through Google Benchmark, with counters measured against the machine's
// limits in the same run (see cases/timing/metrics.hpp). A call that fails
// is reported as an error, never timed.
#include <benchmark/benchmark.h>

#include <cctype>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cases/table.hpp"
#include "cases/timing/machine.hpp"
#include "cases/timing/metrics.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cases {
namespace {

// A case's problem and the timings it is set against, made the first time
// one of its benchmarks runs, then shared by its ISA paths.
struct Prepared {
  Problem problem;
  CaseReferences references;
};

Prepared& prepared(const Case& c) {
  static std::map<const Case*, std::unique_ptr<Prepared>> made;
  std::unique_ptr<Prepared>& p = made[&c];
  if (!p) {
    p = std::make_unique<Prepared>();
    p->problem = c.make(Size::full);
    p->references = measure_references(p->problem, 3);
  }
  return *p;
}

// "x_" and the baseline's name in letters, digits and underscores.
std::string speedup_counter(const std::string& baseline_name) {
  std::string name = "x_";
  for (char ch : baseline_name) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

void run_case(benchmark::State& state, const Case& c, posenc_context* context) {
  const Prepared& p = prepared(c);
  const posenc_status first = p.problem.run(context);
  if (first != POSENC_OK) {
    state.SkipWithError(failure_reason(first).c_str());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const posenc_status status = p.problem.run(context);
    if (status != POSENC_OK) {
      state.SkipWithError(failure_reason(status).c_str());
      break;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      double(std::max<benchmark::IterationCount>(state.iterations(), 1));
  const CaseMetrics m = metrics_for(p.problem, seconds, p.references, machine_figures());
  state.SetBytesProcessed(int64_t(double(state.iterations()) * p.problem.bytes));
  if (p.problem.flops > 0) {
    state.counters["GFLOPs"] = m.gflops;
    state.counters["of_gemm"] = m.fraction_of_gemm;
  }
  state.counters["of_memcpy"] = m.fraction_of_copy;
  state.counters["of_bound"] = m.bound_ratio;
  if (m.speedup > 0) state.counters[speedup_counter(c.baseline_name)] = m.speedup;
}

}  // namespace
}  // namespace posenc::cases

int main(int argc, char** argv) {
  using namespace posenc::cases;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const MachineFigures& machine = machine_figures();
  benchmark::AddCustomContext("onednn_f32_gemm_gflops", std::to_string(machine.gemm_gflops));
  benchmark::AddCustomContext("onednn_bf16_gemm_gflops",
                              std::to_string(machine.bf16_gemm_gflops));
  benchmark::AddCustomContext("memcpy_gbytes_per_s", std::to_string(machine.memcpy_gbytes_per_s));
  benchmark::AddCustomContext("memset_gbytes_per_s", std::to_string(machine.memset_gbytes_per_s));

  static const std::vector<Case> cases = select(all_cases(), "bench", "");
  std::vector<posenc::Context> contexts;  // kept until the benchmarks have run
  for (posenc_isa isa : posenc::runnable_isas()) contexts.emplace_back(posenc::Isa(isa));
  for (const posenc::Context& owned : contexts) {
    posenc_context* context = owned.get();
    const char* isa = posenc::isa_name(owned.isa());
    for (const Case& c : cases) {
      benchmark::RegisterBenchmark((c.op + "/" + c.shape + "/" + isa).c_str(),
                                   [&c, context](benchmark::State& state) {
                                     run_case(state, c, context);
                                   })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
