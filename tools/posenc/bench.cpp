// posenc bench: the cases tagged "bench" x runnable ISA path as one table
// (or JSON), each time set against the oneDNN GEMM rate measured at the
// start and against a memcpy and memset of the case's own bytes, all in the
// same run. A call that fails is not timed: its row says why. With --phases
// each row is followed by where its calls spend their time (phases.hpp).
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "cases/table.hpp"
#include "cases/timing/machine.hpp"
#include "cases/timing/metrics.hpp"
#include "commands.hpp"
#include "phases.hpp"
#include "posenc/core.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {
namespace {

struct Options {
  bool json = false;
  bool phases = false;
  std::string isa;     // empty: every runnable path
  std::string filter;  // substrings of "op shape", comma-separated (cases::filter_parts)
  std::string tag = "bench";
  int repeats = 7;
  bool help = false;
};

const char* const kUsage =
    "usage: posenc bench [--json | --phases] [--isa auto|avx512|avx2|baseline|neon] "
    "[--filter TEXT[,TEXT...]] [--tag bench|demo|check] [--repeats N] (--name=VALUE also)\n"
    "  --filter: the rows whose \"op shape\" contains one of the comma-separated parts (a "
    "comma inside [...], as in mask[2,1,T,T], separates none; spaces around a part are "
    "dropped; each part must match a row)";

Options parse(int argc, char** argv) {
  Options o;
  std::set<std::string> given_options;  // a second value would silently replace the first
  for (int i = 1; i < argc; ++i) {
    const std::string given = argv[i];
    if (given == "--json" || given == "--phases" || given == "-h" || given == "--help") {
      (given == "--json" ? o.json : given == "--phases" ? o.phases : o.help) = true;
      continue;
    }
    const auto joined = joined_option(given);
    const std::string arg = joined ? joined->first : given;
    if (arg != "--isa" && arg != "--filter" && arg != "--tag" && arg != "--repeats") {
      throw BadArgument("unexpected argument '" + given + "'\n" + kUsage);
    }
    if (!joined && !value_follows(argc, argv, i)) {
      throw BadArgument(arg + ": missing value\n" + kUsage);
    }
    const std::string value = joined ? joined->second : argv[++i];
    if (!given_options.insert(arg).second) throw BadArgument(arg + ": given twice\n" + kUsage);
    if (arg == "--isa") {
      if (value.empty()) throw BadArgument("--isa: expected a path name, got ''");
      o.isa = value;
    }
    if (arg == "--filter") {
      // An empty part would match every case (a stray comma starting the whole table).
      for (const std::string& part : cases::filter_parts(value)) {
        if (part.empty()) throw BadArgument("--filter: an empty part in '" + value + "'");
      }
      o.filter = value;
    }
    if (arg == "--tag") {
      if (value != "bench" && value != "demo" && value != "check") {
        throw BadArgument("--tag: expected bench, demo or check, got '" + value + "'");
      }
      o.tag = value;
    }
    if (arg == "--repeats") o.repeats = int(parse_int(arg, value, 1, 1000000));
  }
  if (o.json && o.phases) throw BadArgument("--phases: not with --json\n" + std::string(kUsage));
  return o;
}

// A context for the path named by --isa, or for each runnable path.
std::vector<Context> bench_contexts(const std::string& isa_option) {
  std::vector<Context> contexts;
  if (isa_option.empty()) {
    for (posenc_isa isa : runnable_isas()) contexts.emplace_back(Isa(isa));
    return contexts;
  }
  try {
    posenc_isa wanted;
    check(posenc_isa_from_name(isa_option.c_str(), &wanted));
    contexts.emplace_back(Isa(wanted));
  } catch (const Error& e) {
    throw BadArgument(std::string("--isa: ") + e.what());
  }
  return contexts;
}

}  // namespace

int run_bench(int argc, char** argv) {
  const Options options = parse(argc, argv);
  if (options.help) {
    std::puts(kUsage);
    return 0;
  }
  require_known_isa_cap();
  const std::vector<cases::Case> all = cases::all_cases();
  const std::vector<std::string> unmatched =
      cases::unmatched_parts(all, options.tag, options.filter);
  if (!unmatched.empty()) {
    throw BadArgument("--filter: '" + unmatched.front() + "' matches no case" +
                      (options.tag.empty() ? "" : " tagged '" + options.tag + "'"));
  }
  const std::vector<cases::Case> selected = cases::select(all, options.tag, options.filter);
  const std::vector<Context> contexts = bench_contexts(options.isa);
  const cases::MachineFigures& machine = cases::machine_figures();
  const cases::ColumnWidths widths = cases::column_widths(selected, cases::Size::full);
  const int threads = cases::op_threads();  // the references' and the cases'
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
        if (options.phases && timed.failure.empty()) {
          std::printf("%s", phase_breakdown(problem, context.get(), options.repeats).c_str());
        }
      }
    }
  }
  if (options.json) std::printf("\n  ]\n}\n");
  return 0;
}

}  // namespace posenc::cli
