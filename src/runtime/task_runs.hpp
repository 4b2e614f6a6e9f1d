// How a parallel region's threads share its tasks (parallel_for's schedule).
//
// The tasks [0, count) start as one contiguous run per thread, slot s's
// from count * s / team, each run a [front, back) pair in one atomic word.
// A thread takes its own run's tasks from the front; once its run is empty
// it takes the back half of the longest run with two or more left, which
// becomes its own.
// A thread that is slowed (preempted, on a slower or busier core) or given
// costlier tasks then holds the region up by about two tasks instead of its
// whole run, and the runs stay contiguous: a thread's consecutive tasks
// share what it prepared for their neighbours (the attention's packed
// keys). A run's last task is left to its owner, who is about to run it,
// where a thief would first redo that preparation. Which thread runs a task
// changes no bits: each runs on its thread alone.
//
// A thief takes by compare-and-swap on the pair, only from a run of two
// units or more, leaving it at least one; its owner advances the front by
// an add, only when it has seen a unit left. So front <= back always. A word never holds the same non-empty pair twice (its front unit
// is taken before it empties, and only an empty run is refilled), so a
// thief's stale compare fails.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace posenc {

// Tasks [first, last). An aggregate without initializers: parallel_for
// keeps kMaxThreads of them on the stack and sets its threads' only.
struct TaskRange {
  int64_t first, last;
};

class TaskRuns {
 public:
  // A pair holds two 32-bit unit indices: with more tasks than fit, a unit
  // is `grain` consecutive tasks (max_units: for tests).
  static constexpr int64_t kMaxUnits = int64_t(UINT32_MAX);
  static constexpr int kMaxRuns = 1024;

  // 1 <= team <= kMaxRuns.
  TaskRuns(int64_t count, int team, int64_t max_units = kMaxUnits);
  TaskRuns(const TaskRuns&) = delete;
  TaskRuns& operator=(const TaskRuns&) = delete;

  // The tasks split afresh into `team` runs, before any is taken (OpenMP
  // started fewer threads than the runs were made for).
  void split(int team);
  // The next tasks for the thread in `slot` (< team): from its run, else
  // stolen. False once its run is empty and no other run was seen with two
  // units left (a run in a thief's hands for an instant can be missed,
  // which costs balance, not tasks).
  bool take(int slot, TaskRange& range);
  // After the region: the tasks left in any run, all of them (those of a
  // thread that stopped, or that OpenMP did not start). False once none.
  bool take_left(TaskRange& range);

 private:
  std::atomic<uint64_t>& run(int slot) {
    // 8 words a cache line; run s on line s % kLines, so the runs of up to
    // kLines threads each have a line of their own.
    return words_[std::size_t(slot % kLines * kWordsPerLine + slot / kLines)];
  }
  TaskRange tasks_of(uint64_t first_unit, uint64_t last_unit) const;

  static constexpr int kWordsPerLine = 8;
  static constexpr int kLines = kMaxRuns / kWordsPerLine;
  alignas(64) std::array<std::atomic<uint64_t>, kMaxRuns> words_;
  int64_t count_, grain_;
  int team_ = 0;
};

}  // namespace posenc
