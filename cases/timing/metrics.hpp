// What a measured time means against the machine's limits.
#pragma once

#include "cases/case.hpp"
#include "cases/timing/machine.hpp"

namespace posenc::cases {

// The other timings a problem is set against, measured in the same run: its
// baseline, a memcpy of the same bytes (bytes/2 read, bytes/2 written) and a
// memset of its written bytes, so that cache effects are alike.
struct CaseReferences {
  double baseline_seconds;  // 0 without a baseline
  double copy_seconds;
  double fill_seconds;
};
CaseReferences measure_references(const Problem& p, int repeats);

struct CaseMetrics {
  double seconds;           // median seconds of one call
  double gbytes_per_s;      // bytes read plus written per second
  double gflops;            // 0 for memory-bound ops
  double fraction_of_gemm;  // gflops over the oneDNN GEMM rate of the op's type (0: no rate)
  double fraction_of_copy;  // memcpy time of the same bytes over this time
  double bound_ratio;       // lower-bound time over this time (1 = at the bound; 0: unknown)
  double speedup;           // baseline seconds over seconds (0 without baseline)
};

// The lower bound of a problem is max(flops at the GEMM rate, the memset of
// its written bytes).
CaseMetrics metrics_for(const Problem& p, double seconds, const CaseReferences& references,
                        const MachineFigures& machine);

}  // namespace posenc::cases
