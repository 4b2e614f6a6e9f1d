// fork() after posenc's threads (runtime/openmp_fork.hpp): a child forked
// from a thread that led posenc's OpenMP teams runs every case, on a context
// of two threads, on one thread and with the parent's bits, where libgomp
// would wait forever for the lost team; a child forked from a thread that
// led none keeps its threads. A oneDNN GEMM run on more than one thread
// counts as a team.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "cases/case.hpp"
#include "compare.hpp"
#include "posenc/posenc.hpp"
#include "runtime/matmul.hpp"
#include "runtime/matmul_primitive.hpp"
#include "runtime/openmp_fork.hpp"

namespace posenc::test {
namespace {

using cases::Case;
using cases::Size;

// The child's verdict, its exit status.
enum ChildVerdict { kPassed = 0, kOtherBits = 1, kWrongFlag = 2, kHung = -1 };

// Runs `child` in a forked process and returns its exit status, or kHung if
// it has not ended within `limit` (it is killed then).
int run_in_child(const std::function<int()>& child, std::chrono::seconds limit) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  if (pid < 0) return kHung;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return kHung;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kHung;
}

// Every case and its output on `context`.
struct Expected {
  std::vector<Case> cases;
  std::vector<std::vector<float>> outputs;
};

Expected outputs_of_every_case(posenc_context* context) {
  Expected e;
  for (const Case& c : cases::all_cases()) {
    cases::Problem problem = c.make(Size::test);
    const posenc_status status = problem.run(context);
    EXPECT_EQ(status, POSENC_OK) << c.op << " " << c.test_shape << ": " << posenc_last_error();
    e.cases.push_back(c);
    e.outputs.push_back(problem.output());
  }
  return e;
}

// In the child: whether `problem` gives the parent's bits, `expected`, again.
int verdict_of_run(const cases::Problem& problem, const std::vector<float>& expected,
                   posenc_context* context) {
  if (problem.run(context) != POSENC_OK) return kOtherBits;
  return bitwise_equal(problem.output(), expected) ? kPassed : kOtherBits;
}

// In the child: whether every case gives the parent's bits again.
int verdict_of_rerun(const Expected& e, posenc_context* context, bool teams_lost) {
  if (openmp_teams_lost_to_fork() != teams_lost) return kWrongFlag;
  for (size_t i = 0; i < e.cases.size(); ++i) {
    const int verdict = verdict_of_run(e.cases[i].make(Size::test), e.outputs[i], context);
    if (verdict != kPassed) return verdict;
  }
  return kPassed;
}

constexpr std::chrono::seconds kLimit{300};  // every case, one thread, under qemu

TEST(Fork, ChildOfAThreadThatLedTeamsRunsOnOneThread) {
  posenc::Context two(posenc::Isa::automatic, 2);
  const Expected e = outputs_of_every_case(two.get());  // this thread leads teams of two
  ASSERT_FALSE(openmp_teams_lost_to_fork());
  EXPECT_EQ(run_in_child([&] { return verdict_of_rerun(e, two.get(), true); }, kLimit), kPassed);
}

// The sanitizers that change what a child of a threaded process may do
// (GCC defines __SANITIZE_*__, clang answers __has_feature).
#if defined(__has_feature)
#define POSENC_TEST_HAS_FEATURE(name) __has_feature(name)
#else
#define POSENC_TEST_HAS_FEATURE(name) 0
#endif
#if defined(__SANITIZE_THREAD__) || POSENC_TEST_HAS_FEATURE(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#if defined(__SANITIZE_ADDRESS__) || POSENC_TEST_HAS_FEATURE(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// ThreadSanitizer ends a child of a threaded process that starts threads.
constexpr bool kChildMayStartThreads = !kThreadSanitizer;

TEST(Fork, ChildOfAThreadThatLedNoTeamKeepsItsThreads) {
  if (!kChildMayStartThreads) GTEST_SKIP() << "ThreadSanitizer: no threads after fork";
  posenc::Context two(posenc::Isa::automatic, 2);
  const Expected e = outputs_of_every_case(two.get());
  int verdict = kHung;
  std::thread fresh([&] {
    verdict = run_in_child([&] { return verdict_of_rerun(e, two.get(), false); }, kLimit);
  });
  fresh.join();
  EXPECT_EQ(verdict, kPassed);
}

TEST(Fork, ChildOfAThreadThatRanAOnednnTeamRunsOnOneThread) {
  MatmulShape shape = dense_a_bt(64, 64, 64);
  shape.onednn_threads = 2;
  const std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f);
  std::vector<float> c(64 * 64);
  int verdict = kHung;
  std::thread fresh([&] {
    matmul(shape, a.data(), b.data(), c.data());
    verdict =
        run_in_child([] { return openmp_teams_lost_to_fork() ? kPassed : kWrongFlag; }, kLimit);
  });
  fresh.join();
  EXPECT_EQ(verdict, kPassed);
}

// AddressSanitizer's allocator (GCC 12's runtime) does not hold its locks
// across fork(): a child forked while another thread allocates can wait
// forever on a copy of one (seen about once in a thousand forks beside a
// thread making primitives, the child's stack in the allocator's region
// lock).
constexpr bool kForkBesideAllocatingThreads = !kAddressSanitizer;

// A child forked while another thread makes primitives and holds the
// primitive cache (a capacity of 4, so each of its shapes is made again)
// makes a primitive of its own: the locks are held across fork()
// (runtime/matmul.cpp), where a copy of a held one would never be released.
TEST(Fork, ChildForkedWhileAnotherThreadMakesPrimitivesMakesItsOwn) {
  if (!kChildMayStartThreads) GTEST_SKIP() << "ThreadSanitizer: no fork beside running threads";
  if (!kForkBesideAllocatingThreads) {
    GTEST_SKIP() << "AddressSanitizer: its allocator's locks are not held across fork";
  }
  const int64_t capacity = primitive_cache_capacity();
  set_primitive_cache_capacity(4);
  constexpr int64_t kRows = 64, kMaxRows = 128;
  const std::vector<float> a(kMaxRows * 8, 1.0f), b(8 * 8, 1.0f);
  std::atomic<bool> stop{false};
  std::thread maker([&] {
    std::vector<float> c(kRows * 8);
    for (int64_t m = 1; !stop.load(); m = m % kRows + 1) {
      matmul(dense_a_bt(m, 8, 8), a.data(), b.data(), c.data());
    }
  });
  for (int64_t child = 0; child < 40; ++child) {
    const int verdict = run_in_child(
        [&] {
          std::vector<float> c(kMaxRows * 8);
          matmul(dense_a_bt(kRows + 1 + child, 8, 8), a.data(), b.data(), c.data());
          return c[0] == 8.0f ? kPassed : kOtherBits;
        },
        std::chrono::seconds(30));
    EXPECT_EQ(verdict, kPassed) << "child " << child;
  }
  stop.store(true);
  maker.join();
  set_primitive_cache_capacity(capacity);
}

// fork() waits while another thread runs a oneDNN primitive (holds a
// PrimitiveRunHold, as matmul() does around each run): oneDNN's gemm takes
// a lock of its own on every run, which a child forked then found held for
// good (the test above hung about one child in a thousand on the AVX2 path).
// Nothing else holds fork() up here, so a fork that did not wait ends well
// within the wait below.
TEST(Fork, WaitsWhileAnotherThreadRunsAPrimitive) {
  if (!kChildMayStartThreads) GTEST_SKIP() << "ThreadSanitizer: no fork beside running threads";
  std::atomic<bool> holding{false}, release{false}, child_ended{false};
  std::thread runner([&] {
    const PrimitiveRunHold hold;
    holding.store(true);
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!holding.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int verdict = kHung;
  std::thread forker([&] {
    verdict = run_in_child([] { return kPassed; }, kLimit);
    child_ended.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(child_ended.load()) << "fork() did not wait for the primitive's run";
  release.store(true);
  runner.join();
  forker.join();
  EXPECT_EQ(verdict, kPassed);
}

// A pre-forking server's shape: a child forked while another thread runs
// every case on two threads runs a case on one thread and gives the
// parent's bits: whatever lock a call takes, a fork beside it leaves none
// taken in the child (6000 forks on the AVX-512 and AVX2 paths hung none).
TEST(Fork, ChildForkedWhileAnotherThreadRunsEveryCaseRunsOne) {
  if (!kChildMayStartThreads) GTEST_SKIP() << "ThreadSanitizer: no fork beside running threads";
  if (!kForkBesideAllocatingThreads) {
    GTEST_SKIP() << "AddressSanitizer: its allocator's locks are not held across fork";
  }
  posenc::Context one(posenc::Isa::automatic, 1);
  const Expected e = outputs_of_every_case(one.get());
  std::atomic<bool> stop{false};
  std::thread runner([&] {
    posenc::Context two(posenc::Isa::automatic, 2);
    while (!stop.load()) {
      for (size_t i = 0; i < e.cases.size() && !stop.load(); ++i) {
        e.cases[i].make(Size::test).run(two.get());
      }
    }
  });
  for (size_t child = 0; child < 40; ++child) {
    const size_t i = child * 7 % e.cases.size();
    // Made here: the cases' shared inputs have a lock of their own.
    const cases::Problem problem = e.cases[i].make(Size::test);
    const int verdict =
        run_in_child([&] { return verdict_of_run(problem, e.outputs[i], one.get()); }, kLimit);
    EXPECT_EQ(verdict, kPassed) << "child " << child << ": " << e.cases[i].op << " "
                                << e.cases[i].test_shape;
  }
  stop.store(true);
  runner.join();
}

// A child forked while another thread sets the ISA cap (its cap, again,
// which takes the cap's lock and changes nothing) sets it too: the lock is
// held across fork() (runtime/isa_cap.cpp). A copy of a held one hung the
// child within a few forks.
TEST(Fork, ChildForkedWhileAnotherThreadSetsTheCapSetsItToo) {
  if (!kChildMayStartThreads) GTEST_SKIP() << "ThreadSanitizer: no fork beside running threads";
  const posenc_isa cap = posenc_max_isa();
  std::atomic<bool> stop{false};
  std::thread setter([&] {
    while (!stop.load()) posenc_set_max_isa(cap);
  });
  for (int child = 0; child < 40; ++child) {
    const int verdict =
        run_in_child([&] { return posenc_set_max_isa(cap) == POSENC_OK ? kPassed : kOtherBits; },
                     std::chrono::seconds(30));
    EXPECT_EQ(verdict, kPassed) << "child " << child;
  }
  stop.store(true);
  setter.join();
}

}  // namespace
}  // namespace posenc::test
