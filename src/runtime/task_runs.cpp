#include "runtime/task_runs.hpp"

#include <algorithm>
#include <cassert>

#include "runtime/ceil_div.hpp"

namespace posenc {
namespace {

uint64_t pair(uint64_t front, uint64_t back) { return back << 32 | front; }
uint64_t front_of(uint64_t word) { return word & UINT32_MAX; }
uint64_t back_of(uint64_t word) { return word >> 32; }

}  // namespace

TaskRuns::TaskRuns(int64_t count, int team, int64_t max_units)
    : count_(count), grain_(std::max<int64_t>(1, ceil_div(count, max_units))) {
  split(team);
}

void TaskRuns::split(int team) {
  assert(team >= 1 && team <= kMaxRuns);
  const int64_t units = ceil_div(count_, grain_);
  for (int slot = 0; slot < std::max(team, team_); ++slot) {
    const uint64_t first = uint64_t(units * slot / team);
    const uint64_t last = uint64_t(units * (slot + 1) / team);
    run(slot).store(slot < team ? pair(first, last) : 0, std::memory_order_relaxed);
  }
  team_ = team;
}

TaskRange TaskRuns::tasks_of(uint64_t first_unit, uint64_t last_unit) const {
  return {int64_t(first_unit) * grain_, std::min(count_, int64_t(last_unit) * grain_)};
}

bool TaskRuns::take(int slot, TaskRange& range) {
  // A thief leaves a run at least one unit, so a run seen with some left
  // keeps them until its owner takes: the owner advances the front alone.
  std::atomic<uint64_t>& own = run(slot);
  if (const uint64_t word = own.load(std::memory_order_relaxed); front_of(word) < back_of(word)) {
    const uint64_t front = front_of(own.fetch_add(1, std::memory_order_relaxed));
    range = tasks_of(front, front + 1);
    return true;
  }
  for (;;) {
    // The longest run of at least two units left, and its back half.
    int victim = -1;
    uint64_t longest = 1;
    for (int other = 0; other < team_; ++other) {
      const uint64_t w = run(other).load(std::memory_order_relaxed);
      const uint64_t left = back_of(w) - front_of(w);
      if (left > longest) {
        longest = left;
        victim = other;
      }
    }
    if (victim < 0) return false;
    std::atomic<uint64_t>& theirs = run(victim);
    uint64_t word = theirs.load(std::memory_order_relaxed);
    const uint64_t front = front_of(word), back = back_of(word);
    if (back - front < 2) continue;
    const uint64_t middle = front + (back - front) / 2;
    if (!theirs.compare_exchange_strong(word, pair(front, middle), std::memory_order_relaxed)) {
      continue;
    }
    own.store(pair(middle + 1, back), std::memory_order_relaxed);
    range = tasks_of(middle, middle + 1);
    return true;
  }
}

bool TaskRuns::take_left(TaskRange& range) {
  for (int slot = 0; slot < team_; ++slot) {
    const uint64_t word = run(slot).exchange(0, std::memory_order_relaxed);
    if (front_of(word) < back_of(word)) {
      range = tasks_of(front_of(word), back_of(word));
      return true;
    }
  }
  return false;
}

}  // namespace posenc
