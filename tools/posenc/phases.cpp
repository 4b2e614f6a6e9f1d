#include "phases.hpp"

#include <cstdint>
#include <cstdio>

#include "runtime/context.hpp"
#include "runtime/phase_times.hpp"

namespace posenc::cli {
namespace {

// One line: the time summed over the threads, in ms a call, its share of
// threads x the call, and (where counted) the entries a call and their mean.
std::string line(const char* name, double ms, double share, double entries = 0) {
  char text[200];
  const int n = std::snprintf(text, sizeof text, "    %-44s %10.3f ms %6.1f%%", name, ms,
                              100.0 * share);
  if (entries > 0 && n > 0 && size_t(n) < sizeof text) {
    std::snprintf(text + n, sizeof text - size_t(n), " %10.0f x %9.3f us", entries,
                  1e3 * ms / entries);
  }
  return std::string(text) + "\n";
}

}  // namespace

std::string phase_breakdown(const cases::Problem& problem, posenc_context* context, int repeats) {
  if (problem.run(context) != POSENC_OK) return "";
  take_phase_sums();  // what earlier calls left
  enable_phase_times(true);
  posenc_status status = POSENC_OK;
  const uint64_t start = phase_clock();
  for (int i = 0; i < repeats && status == POSENC_OK; ++i) status = problem.run(context);
  const uint64_t wall = phase_clock() - start;
  enable_phase_times(false);
  const PhaseSums sums = take_phase_sums();
  if (status != POSENC_OK) return "";

  const int threads = resolve_context(context).num_threads;
  // Ticks summed over the calls as milliseconds a call, and the calls'
  // ticks on every thread.
  const double ms_per_tick = 1e3 / phase_clock_rate() / repeats;
  const double capacity = double(wall) * threads;
  auto ticks = [&](Phase phase) { return double(sums.ticks[size_t(phase)]); };
  char head[240];
  std::snprintf(head, sizeof head,
                "  where the time goes: %.3f ms a call with the phases timed, %d thread%s; each "
                "phase summed over them, its share of %d x the call, its entries a call:\n",
                double(wall) * ms_per_tick, threads, threads == 1 ? "" : "s", threads);
  std::string text = head;
  if (ticks(Phase::kTasks) == 0 && ticks(Phase::kBeforeRegion) == 0) {
    return text + "    (this op marks no phases)\n";
  }
  // Each phase's ticks summed over the threads: an op's steps around its
  // attention hold all of them, so their wall time counts once per thread.
  auto print = [&](bool (*listed)(Phase), double per_thread) {
    double summed = 0;
    for (int p = 0; p < kPhases; ++p) {
      const Phase phase = Phase(p);
      if (!listed(phase) || sums.entries[size_t(p)] == 0) continue;
      const double phase_ticks = ticks(phase) * per_thread;
      summed += phase_ticks;
      text += line(phase_name(phase), phase_ticks * ms_per_tick, phase_ticks / capacity,
                   double(sums.entries[size_t(p)]) / repeats);
    }
    return summed;
  };
  const double steps = print(around_attention, threads);
  const double marked = print(inside_tasks, 1);
  const double unmarked = ticks(Phase::kTasks) - marked;
  text += line("the tasks' other work", unmarked * ms_per_tick, unmarked / capacity);
  text += line(phase_name(Phase::kBeforeRegion), ticks(Phase::kBeforeRegion) * ms_per_tick,
               ticks(Phase::kBeforeRegion) / capacity);
  const double outside = capacity - steps - ticks(Phase::kTasks) - ticks(Phase::kBeforeRegion);
  text += line("outside the tasks: waits, plan, other ops", outside * ms_per_tick,
               outside / capacity);
  return text;
}

}  // namespace posenc::cli
