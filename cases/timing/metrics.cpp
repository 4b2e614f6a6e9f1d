#include "cases/timing/metrics.hpp"

#include <algorithm>

namespace posenc::cases {

CaseReferences measure_references(const Problem& c, int repeats) {
  return CaseReferences{c.baseline ? median_seconds(c.baseline, repeats) : 0.0,
                        memcpy_seconds(size_t(c.bytes / 2)),
                        c.write_bytes > 0 ? memset_seconds(size_t(c.write_bytes)) : 0.0};
}

CaseMetrics metrics_for(const Problem& c, double seconds, const CaseReferences& references,
                        const MachineFigures& machine) {
  CaseMetrics m{};
  m.seconds = seconds;
  m.gbytes_per_s = c.bytes / seconds * 1e-9;
  m.gflops = c.flops / seconds * 1e-9;
  const double gemm_gflops =
      c.gemm_type == POSENC_BF16 ? machine.bf16_gemm_gflops : machine.gemm_gflops;
  // Without a GEMM rate (0: oneDNN has no GEMM of the type here) an op that
  // computes has neither a fraction of it nor a bound.
  const bool rated = gemm_gflops > 0;
  m.fraction_of_gemm = rated ? m.gflops / gemm_gflops : 0.0;
  m.fraction_of_copy = references.copy_seconds / seconds;
  if (rated || c.flops == 0) {
    const double compute_seconds = c.flops > 0 ? c.flops * 1e-9 / gemm_gflops : 0.0;
    m.bound_ratio = std::max(compute_seconds, references.fill_seconds) / seconds;
  }
  m.speedup = references.baseline_seconds > 0 ? references.baseline_seconds / seconds : 0.0;
  return m;
}

}  // namespace posenc::cases
