// How a region's threads share its tasks: TaskRuns hands out every task
// once, steals the back half of the longest run, leaves a run's last task
// to its owner, groups tasks into units where they overflow its words; and
// parallel_for finishes a region whose thread is held up.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>
#include <vector>

#include "runtime/parallel.hpp"
#include "runtime/task_runs.hpp"

namespace posenc::test {
namespace {

std::vector<int64_t> drain(TaskRuns& runs, int slot) {
  std::vector<int64_t> tasks;
  for (TaskRange r; runs.take(slot, r);) {
    for (int64_t t = r.first; t < r.last; ++t) tasks.push_back(t);
  }
  return tasks;
}

TEST(TaskRuns, AThreadTakesItsRunThenTheBackHalfOfTheLongest) {
  TaskRuns runs(10, 2);  // slot 0: [0, 5), slot 1: [5, 10)
  TaskRange r;
  for (int64_t t = 0; t < 5; ++t) {
    ASSERT_TRUE(runs.take(0, r));
    EXPECT_EQ(r.first, t);
    EXPECT_EQ(r.last, t + 1);
  }
  // Slot 0's run is empty: it takes [7, 10) of slot 1's five, running 7 now.
  ASSERT_TRUE(runs.take(0, r));
  EXPECT_EQ(r.first, 7);
  for (const int64_t t : {5, 6}) {
    ASSERT_TRUE(runs.take(1, r));
    EXPECT_EQ(r.first, t);
  }
  // Slot 1's run is empty: it takes 9, the back half of slot 0's [8, 10).
  ASSERT_TRUE(runs.take(1, r));
  EXPECT_EQ(r.first, 9);
  EXPECT_EQ(drain(runs, 0), (std::vector<int64_t>{8}));
  EXPECT_FALSE(runs.take(0, r));
  EXPECT_FALSE(runs.take(1, r));
}

TEST(TaskRuns, ARunsLastTaskIsLeftToItsOwner) {
  TaskRuns runs(4, 2);  // slot 0: [0, 2), slot 1: [2, 4)
  TaskRange r;
  ASSERT_TRUE(runs.take(0, r));
  EXPECT_EQ(r.first, 0);
  EXPECT_EQ(drain(runs, 1), (std::vector<int64_t>{2, 3}));  // not 1, slot 0's last
  ASSERT_TRUE(runs.take(0, r));
  EXPECT_EQ(r.first, 1);
  EXPECT_FALSE(runs.take(0, r));
  EXPECT_FALSE(runs.take_left(r));
}

// One thread takes what it can, every run's last task is left, and
// take_left (after a region) hands out the rest: every task once.
TEST(TaskRuns, OneThreadThenTakeLeftRunEveryTaskOnce) {
  for (const int team : {1, 2, 3, 7, 16, TaskRuns::kMaxRuns}) {
    for (const int64_t count : {int64_t(0), int64_t(1), int64_t(6), int64_t(37), int64_t(1031)}) {
      TaskRuns runs(count, team);
      std::vector<int64_t> tasks = drain(runs, team - 1);
      const size_t taken = tasks.size();
      for (TaskRange r; runs.take_left(r);) {
        for (int64_t t = r.first; t < r.last; ++t) tasks.push_back(t);
      }
      // At most a task a run is left, and none of the drained thread's.
      EXPECT_LE(tasks.size() - taken, size_t(team - 1)) << count << " tasks, team " << team;
      std::vector<int> seen(size_t(count), 0);
      for (const int64_t t : tasks) {
        ASSERT_GE(t, 0);
        ASSERT_LT(t, count);
        ++seen[size_t(t)];
      }
      for (int64_t t = 0; t < count; ++t) {
        EXPECT_EQ(seen[size_t(t)], 1) << "task " << t << " of " << count << ", team " << team;
      }
    }
  }
}

// More tasks than a run's words count: units of consecutive tasks, the
// last one shorter, every task once.
TEST(TaskRuns, UnitsGroupTasksBeyondTheWordsRange) {
  const int64_t count = 1000, max_units = 7;  // units of 143 tasks, the last 142
  TaskRuns runs(count, 3, max_units);  // runs of 2, 2 and 3 units
  std::vector<int> seen(size_t(count), 0);
  int ranges = 0;
  for (const int slot : {2, 0, 1}) {
    for (TaskRange r; runs.take(slot, r); ++ranges) {
      EXPECT_EQ(r.first % 143, 0);
      EXPECT_EQ(r.last, std::min<int64_t>(count, r.first + 143));
      for (int64_t t = r.first; t < r.last; ++t) ++seen[size_t(t)];
    }
  }
  EXPECT_EQ(ranges, 7);
  TaskRange r;
  EXPECT_FALSE(runs.take_left(r));
  for (int64_t t = 0; t < count; ++t) EXPECT_EQ(seen[size_t(t)], 1) << t;
}

// Threads taking and stealing at once (some tasks slower): each task once.
TEST(TaskRuns, ConcurrentThreadsTakeEachTaskOnce) {
  const int team = 8;
  const int64_t count = 5000;
  for (int round = 0; round < 20; ++round) {
    TaskRuns runs(count, team);
    std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
    std::vector<std::thread> threads;
    for (int slot = 0; slot < team; ++slot) {
      threads.emplace_back([&, slot] {
        for (TaskRange r; runs.take(slot, r);) {
          for (int64_t t = r.first; t < r.last; ++t) {
            seen[size_t(t)].fetch_add(1);
            if ((t + round) % 97 == 0) std::this_thread::yield();
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int64_t t = 0; t < count; ++t) ASSERT_EQ(seen[size_t(t)].load(), 1) << t;
  }
}

TEST(TaskRuns, SplitGivesTheTasksToFewerRuns) {
  TaskRuns runs(12, 4);
  runs.split(2);  // [0, 6) and [6, 12); the runs of slots 2 and 3 are gone
  TaskRange r;
  ASSERT_TRUE(runs.take(1, r));
  EXPECT_EQ(r.first, 6);
  // Slot 0: its run, then 9 (of slot 1's [7, 12)) and its [10, 12), then 8
  // (of [7, 9)); 7, slot 1's last, is left to slot 1.
  EXPECT_EQ(drain(runs, 0), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 9, 10, 11, 8}));
  EXPECT_EQ(drain(runs, 1), (std::vector<int64_t>{7}));
  EXPECT_FALSE(runs.take_left(r));
}

// Task 0 (the first of thread 0's run) waits for every task but itself
// and at most one more (its run's last, left to it): with fixed runs
// thread 0's other tasks would wait behind it; taken over by the other
// threads, they finish.
TEST(ParallelFor, AHeldUpThreadsRunIsTakenOver) {
  const int64_t count = 64;
  std::atomic<int64_t> done{0};
  bool waited = false, others_finished = false;
  parallel_for(4, count, [&](int64_t task) {
    if (task == 0 && omp_get_num_threads() > 1) {
      waited = true;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done.load() < count - 2 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      others_finished = done.load() >= count - 2;
    }
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), count);
  if (!waited) GTEST_SKIP() << "OpenMP gave the region one thread";
  EXPECT_TRUE(others_finished);
}

// Tasks that throw on their first call (oneDNN's execute allocating) run
// again once, after the region; every other task runs once. Where the
// first task each thread runs throws, every thread stops at once and the
// calling thread runs all the rest.
TEST(ParallelFor, ATaskThatThrowsRunsAgainOnceAndEveryOtherOnce) {
  const int64_t count = 40;
  for (const int threads : {2, 3, 4}) {
    for (const bool each_threads_first : {false, true}) {
      std::vector<std::atomic<int>> calls(static_cast<size_t>(count));
      std::vector<std::atomic<int>> completed(static_cast<size_t>(count));
      std::vector<std::atomic<bool>> threw(static_cast<size_t>(count));
      std::vector<std::atomic<bool>> slot_started(static_cast<size_t>(threads));
      parallel_for(threads, count, [&](int64_t task, int slot) {
        const bool first_of_slot = !slot_started[size_t(slot)].exchange(true);
        const bool throws = each_threads_first ? first_of_slot : task == 5;
        if (calls[size_t(task)].fetch_add(1) == 0 && throws) {
          threw[size_t(task)] = true;
          throw std::bad_alloc();
        }
        completed[size_t(task)].fetch_add(1);
      });
      for (int64_t t = 0; t < count; ++t) {
        EXPECT_EQ(completed[size_t(t)].load(), 1) << "task " << t << ", " << threads << " threads";
        EXPECT_EQ(calls[size_t(t)].load(), threw[size_t(t)] ? 2 : 1) << "task " << t;
      }
      EXPECT_TRUE(threw[5] || each_threads_first);
    }
  }
}

}  // namespace
}  // namespace posenc::test
