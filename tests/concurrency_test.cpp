// Many threads calling different ops at once (every case of cases/ at its
// test size) on shared read-only inputs give results bitwise equal to calls
// made one at a time. Each call makes its problem afresh, with an output of
// its own (an op in place changes its buffer); the inputs, and the RoPE
// cases' caches, are shared by all of them (cases/values.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cases/case.hpp"
#include "compare.hpp"
#include "posenc/posenc.hpp"

namespace posenc::test {
namespace {

using cases::Case;
using cases::Size;

// POSENC_CONCURRENCY_SECONDS shortens or lengthens the run (default 2 s).
double run_seconds() {
  const char* env = std::getenv("POSENC_CONCURRENCY_SECONDS");
  return env != nullptr ? std::atof(env) : 2.0;
}

// The output of one call on a fresh problem; empty if the call failed.
std::vector<float> output_of(const Case& c, posenc_context* context) {
  const cases::Problem problem = c.make(Size::test);
  if (problem.run(context) != POSENC_OK) return {};
  return problem.output();
}

TEST(Concurrency, EightThreadsMatchSequentialCalls) {
  // A single-threaded context and the shared default: both used at once.
  posenc::Context single(posenc::Isa::automatic, 1);
  posenc_context* const contexts[] = {single.get(), nullptr};
  // Every case (bf16 runs on every CPU: widened to fp32 where the attention's
  // GEMMs do not run in bf16).
  std::vector<Case> cases;
  std::vector<cases::Problem> holders;  // keep each case's inputs alive, hence shared
  std::vector<std::vector<float>> expected[2];
  for (const Case& c : cases::all_cases()) {
    cases::Problem problem = c.make(Size::test);
    const posenc_status status = problem.run(single.get());
    ASSERT_EQ(status, POSENC_OK) << c.op << " " << c.test_shape << ": " << posenc_last_error();
    cases.push_back(c);
    holders.push_back(std::move(problem));
    for (int k = 0; k < 2; ++k) {
      expected[k].push_back(output_of(c, contexts[k]));
      ASSERT_FALSE(expected[k].back().empty()) << c.op << " " << c.test_shape;
    }
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
        const size_t op = i % cases.size();
        const int k = int(i / cases.size()) % 2;
        const std::vector<float> out = output_of(cases[op], contexts[k]);
        if (out.empty() || !bitwise_equal(out, expected[k][op])) ++mismatches;
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
