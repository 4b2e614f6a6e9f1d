// The parallel loop of every op, and the rule its regions follow.
//
// Everything a call allocates is allocated before its parallel region: the
// threads' scratch (RegionScratch, runtime/workspace.hpp) and their GEMM
// slots (GemmSlots: the primitives, memory objects and scratchpads of the
// shapes the op prepares), so that a task neither allocates in posenc nor
// creates a oneDNN object. Inside the region a GEMM only looks up what was
// prepared, and the calling thread holds it (PrimitiveHold): another thread
// dropping it from the primitive cache does not take it from the region. A
// task can still throw there: oneDNN 2.6's execute allocates its argument
// map. Its thread then stops (the others take the rest of its run), and
// once the region has ended the calling thread runs the task that threw,
// and any left, itself, the same way (one thread per GEMM, so the same
// bits), making anything missing.
// A call on one thread runs the task that threw, and those after it, again.
// Running out of OpenMP threads cannot be caught: libgomp ends the process
// when it cannot create a thread (posenc_context_create bounds num_threads).
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "runtime/matmul.hpp"
#include "runtime/openmp_fork.hpp"
#include "runtime/task_runs.hpp"

namespace posenc {

// The most threads a region uses (posenc_context_create's bound).
constexpr int kMaxThreads = POSENC_MAX_THREADS;
static_assert(kMaxThreads <= TaskRuns::kMaxRuns, "a run for every thread");

// Sets the OpenMP thread count of the calling thread (which oneDNN's
// primitives use outside a parallel region) for the life of the scope. Run
// with a context's thread count, it makes that count govern oneDNN as well;
// run with 1 around a serial loop of tiles, each tile's GEMM runs on one
// thread exactly as it does inside a parallel region, so results do not
// depend on the thread count.
class OpenMpThreads {
 public:
  explicit OpenMpThreads(int threads) : saved_(omp_get_max_threads()) {
    if (threads > 1) note_openmp_team();
    omp_set_num_threads(threads);
  }
  ~OpenMpThreads() { omp_set_num_threads(saved_); }
  OpenMpThreads(const OpenMpThreads&) = delete;
  OpenMpThreads& operator=(const OpenMpThreads&) = delete;

 private:
  int saved_;
};

// The threads a GEMM made and run outside posenc's regions may use. oneDNN
// 2.6 fixes a split of its work for them and, where OpenMP gives its region
// fewer (OMP_DYNAMIC, OMP_THREAD_LIMIT, max-active-levels reached, a
// caller's region around the call), skips the parts of the missing threads:
// so `threads` only when OpenMP promises the whole team, else 1.
inline int onednn_team_threads(int threads) {
  const bool whole_team = !omp_in_parallel() && !omp_get_dynamic() &&
                          omp_get_thread_limit() >= threads && omp_get_max_active_levels() > 0;
  return whole_team ? threads : 1;
}

// The threads a region of `count` tasks runs on: min(threads, count), at
// least 1. Size per-thread scratch with it.
inline int region_threads(int threads, int64_t count) {
  return int(std::clamp<int64_t>(std::min<int64_t>(threads, count), 1, kMaxThreads));
}

// Calls body(task, slot), or body(task), for every task in [0, count) on
// region_threads(threads, count) threads (or the fewer OpenMP gives), each
// starting on a contiguous run of tasks and taking over part of another's
// when its own is done (TaskRuns); slot in [0, region_threads) names the
// thread's scratch. GEMMs run in the slot's GemmSlots entry, on their thread
// alone (oneDNN would otherwise split a GEMM of a region OpenMP made
// inactive, a team of one, for threads that do not come). With one thread
// the tasks run in order on the calling thread.
template <class Body>
void parallel_for(int threads, int64_t count, const Body& body) {
  auto call = [&body](int64_t task, int slot) {
    if constexpr (std::is_invocable_v<const Body&, int64_t, int>) {
      body(task, slot);
    } else {
      body(task);
    }
  };
  // Runs tasks [first, last) in `slot`; returns the one that threw, or last.
  auto run_until_failure = [&call](int64_t first, int64_t last, int slot) {
    for (int64_t task = first; task < last; ++task) {
      try {
        call(task, slot);
      } catch (...) {
        return task;
      }
    }
    return last;
  };
  const int slots = region_threads(threads, count);
  const GemmSlots gemm_slots(slots);
  if (slots == 1) {
    const OpenMpThreads single(1);  // each task's GEMMs on this thread alone
    const GemmSlots::Use use(gemm_slots, 0, false);
    // A task that fails (oneDNN's execute allocates) runs again, with those
    // after it, once: as a region's threads' tasks do.
    for (int64_t task = run_until_failure(0, count, 0); task < count; ++task) call(task, 0);
    return;
  }
  TaskRuns runs(count, slots);
  // Per thread: the tasks it took and did not finish, the first having thrown.
  std::array<TaskRange, kMaxThreads> unfinished;
  std::fill_n(unfinished.begin(), slots, TaskRange{0, 0});
  note_openmp_team();
#pragma omp parallel num_threads(slots)
  {
    const int slot = omp_get_thread_num(), team = omp_get_num_threads();
    if (team < slots) {  // OMP_THREAD_LIMIT, OMP_DYNAMIC, nested: the runs are the team's
#pragma omp single
      runs.split(team);
    }
    const OpenMpThreads single(1);
    const GemmSlots::Use use(gemm_slots, slot, true);
    for (TaskRange taken; runs.take(slot, taken);) {
      const int64_t stopped = run_until_failure(taken.first, taken.last, slot);
      if (stopped < taken.last) {
        unfinished[size_t(slot)] = {stopped, taken.last};
        break;
      }
    }
  }
  // The tasks that threw, then what the runs of stopped threads kept (a
  // run's last task, or more where every thread stopped).
  const OpenMpThreads single(1);
  const GemmSlots::Use use(gemm_slots, 0, false);
  for (int slot = 0; slot < slots; ++slot) {
    for (int64_t task = unfinished[size_t(slot)].first; task < unfinished[size_t(slot)].last;
         ++task) {
      call(task, 0);
    }
  }
  for (TaskRange left; runs.take_left(left);) {
    for (int64_t task = left.first; task < left.last; ++task) call(task, 0);
  }
}

}  // namespace posenc
