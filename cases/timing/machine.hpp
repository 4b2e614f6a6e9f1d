// The machine as the benchmarks see it: the ISA paths it runs, and its limits
// measured in the same run as the benchmarks (the oneDNN fp32 and bf16 GEMM
// rates and the copy and fill bandwidth on the ops' threads, op_threads()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "posenc/core.h"

namespace posenc::cases {

struct MachineFigures {
  // oneDNN's matmul rate at its best, warm, on the run's threads, B in
  // oneDNN's packed layout (packed once, as the attention packs its keys):
  // the fastest of 1024^3 and 2048^3 on oneDNN's threads and of every
  // thread multiplying its own 256 x 512 x 1024 or 512^3, as the ops' tasks
  // do.
  double gemm_gflops;          // fp32
  double bf16_gemm_gflops;     // bf16 in, fp32 out; 0 if oneDNN has none here
  double memcpy_gbytes_per_s;  // bytes read plus written, 64 MiB, all threads
  double memset_gbytes_per_s;  // bytes written, 64 MiB, all threads
};

// Measured at the first call, then kept.
const MachineFigures& machine_figures();

// The threads an op runs on without a context's count: OpenMP's default, at
// most POSENC_MAX_THREADS. The machine's figures are measured on as many.
int op_threads();

// Every thread of op_threads() multiplying its own m x n x k (A [m, k], B [k, n]
// packed once where oneDNN packs it, as the attention packs a head's keys
// and values; C fp32), as the ops' tasks run their GEMMs: the whole team's
// GFLOP/s, warm; 0 where oneDNN has no GEMM of `type` on this CPU or cap.
double own_gemms_team_gflops(posenc_dtype type, int64_t m, int64_t n, int64_t k);

// Median seconds of `repeats` runs of fn, and the same after one warm-up run.
double median_of_runs(const std::function<void()>& fn, int repeats);
double median_seconds(const std::function<void()>& fn, int repeats);

// Median seconds of copying / filling `bytes` bytes on op_threads() threads.
double memcpy_seconds(size_t bytes);
double memset_seconds(size_t bytes);

}  // namespace posenc::cases
