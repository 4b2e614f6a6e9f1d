// Shared pieces of the benchmarks: per-ISA registration, the machine's
// limits measured in the same run, and ratios against them.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "posenc/posenc.h"

namespace posenc::bench {

// Measured once per process (first call): the oneDNN fp32 GEMM rate at
// 1024^3 on the default thread count, and memcpy / memset bandwidth over
// 64 MiB on all threads, counting bytes read plus written for memcpy.
struct MachineFigures {
  double gemm_gflops;
  double memcpy_gbytes_per_s;
  double memset_gbytes_per_s;
};
const MachineFigures& machine_figures();

// Median seconds of copying / setting `bytes` bytes on all OpenMP threads
// (buffers kept per size).
double memcpy_seconds(size_t bytes);
double memset_seconds(size_t bytes);

using IsaBenchmark = std::function<void(benchmark::State&, posenc_context*)>;

// Registers name/<isa> for every ISA path the CPU runs under the cap.
void register_per_isa(const std::string& name, const IsaBenchmark& body);

// Runs the benchmark loop and returns the seconds per iteration.
template <class Body>
double timed_loop(benchmark::State& state, const Body& body) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) body();
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return state.iterations() > 0 ? total / double(state.iterations()) : 0.0;
}

// Sets counter `name` to reference_seconds / seconds: above 1 means faster
// than the reference.
void set_speedup(benchmark::State& state, const char* name, double reference_seconds,
                 double seconds);

}  // namespace posenc::bench
