// posenc_bench: measures the machine's limits first, then every benchmark.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "bench_families.hpp"
#include "bench_support.hpp"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto& figures = posenc::bench::machine_figures();
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", figures.gemm_gflops);
  benchmark::AddCustomContext("onednn_f32_gemm_gflops", text);
  std::snprintf(text, sizeof text, "%.1f", figures.memcpy_gbytes_per_s);
  benchmark::AddCustomContext("memcpy_gbytes_per_s", text);
  std::snprintf(text, sizeof text, "%.1f", figures.memset_gbytes_per_s);
  benchmark::AddCustomContext("memset_gbytes_per_s", text);
  benchmark::AddCustomContext("posenc_best_isa", posenc_isa_name(posenc_best_isa()));

  posenc::bench::register_absolute_benchmarks();
  posenc::bench::register_relative_benchmarks();

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
