// posenc bench: every benchmark case x runnable ISA path as one table (or
// JSON), each time set against the oneDNN GEMM rate measured at the start and
// against a memcpy and memset of the case's own bytes, all in the same run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cases/bench_case.hpp"
#include "cases/machine.hpp"
#include "cases/metrics.hpp"
#include "commands.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {
namespace {

using bench::BenchCase;
using bench::CaseMetrics;

struct Options {
  bool json = false;
  std::string isa;     // empty: every runnable path
  std::string filter;  // substring of "op shape"
  int repeats = 7;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      o.json = true;
    } else if ((arg == "--isa" || arg == "--filter" || arg == "--repeats") && i + 1 < argc) {
      const char* value = argv[++i];
      if (arg == "--isa") o.isa = value;
      if (arg == "--filter") o.filter = value;
      if (arg == "--repeats") o.repeats = std::max(1, std::atoi(value));
    } else {
      std::fprintf(stderr,
                   "usage: posenc bench [--json] [--isa avx512|avx2|baseline|neon] "
                   "[--filter TEXT] [--repeats N]\n");
      return false;
    }
  }
  return true;
}

void print_row(const BenchCase& c, const char* isa, const CaseMetrics& m, bool json,
               const bench::ColumnWidths& widths, bool& first) {
  if (json) {
    std::printf("%s\n    {\"op\": \"%s\", \"shape\": \"%s\", \"isa\": \"%s\", "
                "\"median_ms\": %.4f, \"gbytes_per_s\": %.3f, \"gflops\": %.3f, "
                "\"fraction_of_gemm\": %.4f, \"fraction_of_memcpy\": %.4f, "
                "\"fraction_of_bound\": %.4f, \"baseline\": \"%s\", \"speedup\": %.3f}",
                first ? "" : ",", c.op.c_str(), c.shape.c_str(), isa, m.seconds * 1e3,
                m.gbytes_per_s, m.gflops, m.fraction_of_gemm, m.fraction_of_copy,
                m.bound_ratio, c.baseline_name.c_str(), m.speedup);
  } else {
    char speedup[48] = "-";
    if (m.speedup > 0) {
      std::snprintf(speedup, sizeof speedup, "%.1fx %s", m.speedup, c.baseline_name.c_str());
    }
    char gflops[16] = "-", of_gemm[16] = "-";
    if (c.flops > 0) {
      std::snprintf(gflops, sizeof gflops, "%.1f", m.gflops);
      std::snprintf(of_gemm, sizeof of_gemm, "%.0f%%", 100 * m.fraction_of_gemm);
    }
    std::printf("%-*s %-*s %-9s %9.3f %8s %8.1f %7s %8.0f%% %7.0f%%  %s\n", widths.op,
                c.op.c_str(), widths.shape, c.shape.c_str(), isa, m.seconds * 1e3, gflops,
                m.gbytes_per_s, of_gemm, 100 * m.fraction_of_copy, 100 * m.bound_ratio, speedup);
  }
  first = false;
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
  const bench::MachineFigures& machine = bench::machine_figures();
  bench::CaseList cases;  // those the filter selects
  for (BenchCase& c : bench::all_cases()) {
    if ((c.op + " " + c.shape).find(options.filter) != std::string::npos) {
      cases.push_back(std::move(c));
    }
  }
  const bench::ColumnWidths widths = bench::column_widths(cases);
  if (options.json) {
    std::printf("{\n  \"machine\": {\"onednn_f32_gemm_gflops\": %.1f, "
                "\"onednn_bf16_gemm_gflops\": %.1f, \"memcpy_gbytes_per_s\": %.1f, "
                "\"memset_gbytes_per_s\": %.1f},\n  \"results\": [",
                machine.gemm_gflops, machine.bf16_gemm_gflops, machine.memcpy_gbytes_per_s,
                machine.memset_gbytes_per_s);
  } else {
    std::printf("machine, measured now: oneDNN GEMM fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s "
                "(0: none), memcpy %.1f GB/s, memset %.1f GB/s\n\n",
                machine.gemm_gflops, machine.bf16_gemm_gflops, machine.memcpy_gbytes_per_s,
                machine.memset_gbytes_per_s);
    std::printf("%-*s %-*s %-9s %9s %8s %8s %7s %9s %8s  %s\n", widths.op, "op", widths.shape,
                "shape", "isa", "median ms", "GFLOP/s", "GB/s", "of GEMM", "of memcpy",
                "of bound", "speedup");
  }
  bool first = true;
  for (const BenchCase& c : cases) {
    const bench::CaseReferences references =
        bench::measure_references(c, std::max(1, options.repeats / 2));
    for (const Context& context : contexts) {
      const double seconds =
          bench::median_seconds([&] { c.run(context.get()); }, options.repeats);
      print_row(c, isa_name(context.isa()), bench::metrics_for(c, seconds, references, machine),
                options.json, widths, first);
    }
  }
  if (options.json) std::printf("\n  ]\n}\n");
  return 0;
}

}  // namespace posenc::cli
