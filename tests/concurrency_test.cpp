// Many threads calling different ops at once on shared read-only inputs give
// results bitwise equal to calls made one at a time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "op_runners.hpp"
#include "posenc/posenc.hpp"

namespace posenc::test {
namespace {

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// POSENC_CONCURRENCY_SECONDS shortens or lengthens the run (default 2 s).
double run_seconds() {
  const char* env = std::getenv("POSENC_CONCURRENCY_SECONDS");
  return env != nullptr ? std::atof(env) : 2.0;
}

TEST(Concurrency, EightThreadsMatchSequentialCalls) {
  const std::vector<OpRunner> runners = all_runners();
  // A single-threaded context and the shared default: both used at once.
  posenc::Context single(posenc::Isa::automatic, 1);
  posenc_context* const contexts[] = {single.get(), nullptr};
  std::vector<std::vector<float>> expected[2];
  for (int c = 0; c < 2; ++c) {
    for (const OpRunner& r : runners) expected[c].push_back(r.run(contexts[c]));
  }

  constexpr int kThreads = 8;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(run_seconds());
  std::atomic<int> mismatches{0};
  std::atomic<long> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      size_t i = size_t(t);
      do {
        const size_t op = i % runners.size();
        const int c = int(i / runners.size()) % 2;
        if (!bitwise_equal(runners[op].run(contexts[c]), expected[c][op])) ++mismatches;
        ++calls;
        ++i;
      } while (std::chrono::steady_clock::now() < deadline);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0) << "over " << calls.load() << " calls";
  EXPECT_GE(calls.load(), long(kThreads));
}

}  // namespace
}  // namespace posenc::test
