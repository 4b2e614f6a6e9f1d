#include "phases.hpp"

#include <omp.h>

#include <array>
#include <cstdint>
#include <cstdio>

#include "runtime/phase_times.hpp"

namespace posenc::cli {
namespace {

std::string line(const char* name, double ms, double share) {
  char text[160];
  std::snprintf(text, sizeof text, "    %-48s %10.3f ms %6.1f%%\n", name, ms, 100.0 * share);
  return text;
}

}  // namespace

std::string phase_breakdown(const cases::Problem& problem, posenc_context* context, int repeats) {
  if (problem.run(context) != POSENC_OK) return "";
  take_phase_ticks();  // what earlier calls left
  enable_phase_times(true);
  posenc_status status = POSENC_OK;
  const uint64_t start = phase_clock();
  for (int i = 0; i < repeats && status == POSENC_OK; ++i) status = problem.run(context);
  const uint64_t wall = phase_clock() - start;
  enable_phase_times(false);
  const std::array<uint64_t, kPhases> ticks = take_phase_ticks();
  if (status != POSENC_OK) return "";

  const int context_threads = posenc_context_num_threads(context);
  const int threads = context_threads > 0 ? context_threads : omp_get_max_threads();
  // Ticks summed over the calls as milliseconds a call, and the calls'
  // ticks on every thread.
  const double ms_per_tick = 1e3 / phase_clock_rate() / repeats;
  const double capacity = double(wall) * threads;
  auto at = [&](Phase phase) { return double(ticks[size_t(phase)]); };
  char head[200];
  std::snprintf(head, sizeof head,
                "  where the time goes: %.3f ms a call timed with the phases on, %d thread%s; "
                "each phase summed over them, and its share of %d x the call:\n",
                double(wall) * ms_per_tick, threads, threads == 1 ? "" : "s", threads);
  std::string text = head;
  if (at(Phase::kTasks) == 0 && at(Phase::kBeforeRegion) == 0) {
    return text + "    (this op marks no phases)\n";
  }
  double marked = 0;
  for (int p = int(Phase::kCopyQueries); p < kPhases; ++p) {
    const Phase phase = Phase(p);
    if (at(phase) == 0) continue;
    marked += at(phase);
    text += line(phase_name(phase), at(phase) * ms_per_tick, at(phase) / capacity);
  }
  const double unmarked = at(Phase::kTasks) - marked;
  text += line("the tasks' other work", unmarked * ms_per_tick, unmarked / capacity);
  text += line(phase_name(Phase::kBeforeRegion), at(Phase::kBeforeRegion) * ms_per_tick,
               at(Phase::kBeforeRegion) / capacity);
  const double outside = capacity - at(Phase::kTasks) - at(Phase::kBeforeRegion);
  text += line("outside the tasks (waits, region, checks, plan)", outside * ms_per_tick,
               outside / capacity);
  return text;
}

}  // namespace posenc::cli
