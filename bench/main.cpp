// posenc_bench: every benchmark case on every runnable ISA path through
// Google Benchmark, with counters measured against the machine's limits in
// the same run (see cases/metrics.hpp).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

#include "cases/bench_case.hpp"
#include "cases/machine.hpp"
#include "cases/metrics.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::bench {
namespace {

// The references of each case are timed once, the first time they are needed.
const CaseReferences& references(const BenchCase& c) {
  static std::map<const BenchCase*, CaseReferences> cache;
  auto it = cache.find(&c);
  if (it == cache.end()) it = cache.emplace(&c, measure_references(c, 3)).first;
  return it->second;
}

void run_case(benchmark::State& state, const BenchCase& c, posenc_context* context) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) c.run(context);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      double(std::max<benchmark::IterationCount>(state.iterations(), 1));
  const CaseMetrics m = metrics_for(c, seconds, references(c), machine_figures());
  state.SetBytesProcessed(int64_t(double(state.iterations()) * c.bytes));
  if (c.flops > 0) {
    state.counters["GFLOPs"] = m.gflops;
    state.counters["of_gemm"] = m.fraction_of_gemm;
  }
  state.counters["of_memcpy"] = m.fraction_of_copy;
  state.counters["of_bound"] = m.bound_ratio;
  if (m.speedup > 0) state.counters["x_" + c.baseline_name] = m.speedup;
}

}  // namespace
}  // namespace posenc::bench

int main(int argc, char** argv) {
  using namespace posenc::bench;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const MachineFigures& machine = machine_figures();
  benchmark::AddCustomContext("onednn_f32_gemm_gflops", std::to_string(machine.gemm_gflops));
  benchmark::AddCustomContext("onednn_bf16_gemm_gflops",
                              std::to_string(machine.bf16_gemm_gflops));
  benchmark::AddCustomContext("memcpy_gbytes_per_s", std::to_string(machine.memcpy_gbytes_per_s));
  benchmark::AddCustomContext("memset_gbytes_per_s", std::to_string(machine.memset_gbytes_per_s));

  static const CaseList cases = all_cases();
  std::vector<posenc::Context> contexts;  // kept until the benchmarks have run
  for (posenc_isa isa : posenc::runnable_isas()) contexts.emplace_back(posenc::Isa(isa));
  for (const posenc::Context& owned : contexts) {
    posenc_context* context = owned.get();
    const char* isa = posenc::isa_name(owned.isa());
    for (const BenchCase& c : cases) {
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
