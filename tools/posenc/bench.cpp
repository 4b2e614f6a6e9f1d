// posenc bench: the cases tagged "bench" x runnable ISA path as one table
// (or JSON), each time set against the oneDNN GEMM rate measured at the
// start and against a memcpy and memset of the case's own bytes, all in the
// same run. A call that fails is not timed: its row says why.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cases/table.hpp"
#include "cases/timing/machine.hpp"
#include "cases/timing/metrics.hpp"
#include "commands.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {
namespace {

struct Options {
  bool json = false;
  std::string isa;     // empty: every runnable path
  std::string filter;  // substrings of "op shape", comma-separated
  std::string tag = "bench";
  int repeats = 7;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      o.json = true;
    } else if ((arg == "--isa" || arg == "--filter" || arg == "--tag" || arg == "--repeats") &&
               i + 1 < argc) {
      const char* value = argv[++i];
      if (arg == "--isa") o.isa = value;
      if (arg == "--filter") o.filter = value;
      if (arg == "--tag") o.tag = value;
      if (arg == "--repeats") o.repeats = std::max(1, std::atoi(value));
    } else {
      std::fprintf(stderr,
                   "usage: posenc bench [--json] [--isa avx512|avx2|baseline|neon] "
                   "[--filter TEXT[,TEXT...]] [--tag bench|demo|check] [--repeats N]\n");
      return false;
    }
  }
  return true;
}

}  // namespace

int run_bench(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) return 2;
  std::vector<Context> contexts;
  try {
    if (!options.isa.empty()) {
      posenc_isa wanted;
      check(posenc_isa_from_name(options.isa.c_str(), &wanted));
      contexts.emplace_back(Isa(wanted));
    } else {
      for (posenc_isa isa : runnable_isas()) contexts.emplace_back(Isa(isa));
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "posenc bench: %s\n", e.what());
    return 2;
  }
  const cases::MachineFigures& machine = cases::machine_figures();
  const std::vector<cases::Case> selected =
      cases::select(cases::all_cases(), options.tag, options.filter);
  const cases::ColumnWidths widths = cases::column_widths(selected, cases::Size::full);
  const int threads = omp_get_max_threads();  // the references' and the cases' default
  if (options.json) {
    std::printf("{\n  \"machine\": {\"threads\": %d, \"onednn_f32_gemm_gflops\": %.1f, "
                "\"onednn_bf16_gemm_gflops\": %.1f, \"memcpy_gbytes_per_s\": %.1f, "
                "\"memset_gbytes_per_s\": %.1f},\n  \"results\": [",
                threads, machine.gemm_gflops, machine.bf16_gemm_gflops,
                machine.memcpy_gbytes_per_s, machine.memset_gbytes_per_s);
  } else {
    std::printf("machine, measured now on %d thread%s (OMP_NUM_THREADS sets them): oneDNN GEMM "
                "fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s (0: none), memcpy %.1f GB/s, memset "
                "%.1f GB/s\n\n",
                threads, threads == 1 ? "" : "s", machine.gemm_gflops, machine.bf16_gemm_gflops,
                machine.memcpy_gbytes_per_s, machine.memset_gbytes_per_s);
    std::printf("%s", cases::bench_header(widths).c_str());
  }
  const char* separator = "";
  for (const cases::Case& c : selected) {
    const cases::Problem problem = c.make(cases::Size::full);
    const cases::CaseReferences references =
        cases::measure_references(problem, std::max(1, options.repeats / 2));
    for (const Context& context : contexts) {
      const char* isa = isa_name(context.isa());
      const cases::Timed timed = cases::time_problem(problem, context.get(), options.repeats);
      const cases::CaseMetrics metrics =
          timed.failure.empty() ? cases::metrics_for(problem, timed.seconds, references, machine)
                                : cases::CaseMetrics{};
      if (options.json) {
        std::printf("%s\n    %s", separator,
                    cases::bench_json_row(c, isa, timed, metrics).c_str());
        separator = ",";
      } else {
        std::printf("%s", cases::bench_row(c, isa, timed, metrics, widths).c_str());
      }
    }
  }
  if (options.json) std::printf("\n  ]\n}\n");
  return 0;
}

}  // namespace posenc::cli
