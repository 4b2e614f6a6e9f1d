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
  m.fraction_of_gemm = m.gflops / gemm_gflops;
  m.fraction_of_copy = references.copy_seconds / seconds;
  const double bound = std::max(c.flops * 1e-9 / gemm_gflops, references.fill_seconds);
  m.bound_ratio = bound / seconds;
  m.speedup = references.baseline_seconds > 0 ? references.baseline_seconds / seconds : 0.0;
  return m;
}

}  // namespace posenc::cases
