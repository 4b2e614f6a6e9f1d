// Every case of cases/ at its test size on every ISA path: its output against
// the reference loops in double, and the same bits at 1, 2 and 3 threads, when
// repeated, and when OpenMP gives a region fewer threads than asked for (as
// the README promises: work is split into the same blocks whatever the thread
// count, and no sum crosses threads).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "cases/case.hpp"
#include "cases/values.hpp"
#include "compare.hpp"
#include "posenc/posenc.h"
#include "runtime/compiled_isas.hpp"

namespace posenc::test {
namespace {

using cases::Case;
using cases::Size;

const std::vector<Case>& every_case() {
  static const std::vector<Case> all = cases::all_cases();
  return all;
}

using Param = std::tuple<size_t, posenc_isa>;  // index into every_case(), path

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const Case& c = every_case()[std::get<0>(info.param)];
  std::string name = c.op + "_" + c.test_shape + "_" + posenc_isa_name(std::get<1>(info.param));
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

class Cases : public ::testing::TestWithParam<Param> {};

// While alive, if on: every OpenMP region of the process runs on a team of
// one thread, as OMP_DYNAMIC, OMP_THREAD_LIMIT or a caller's own settings
// can make it.
class OneThreadTeams {
 public:
  explicit OneThreadTeams(bool on) : saved_(omp_get_max_active_levels()) {
    if (on) omp_set_max_active_levels(0);
  }
  ~OneThreadTeams() { omp_set_max_active_levels(saved_); }
  OneThreadTeams(const OneThreadTeams&) = delete;
  OneThreadTeams& operator=(const OneThreadTeams&) = delete;

 private:
  int saved_;
};

TEST_P(Cases, MatchReferenceWithTheSameBitsAtAnyThreadCount) {
  const Case& c = every_case()[std::get<0>(GetParam())];
  const posenc_isa isa = std::get<1>(GetParam());
  int available = 0;
  ASSERT_EQ(posenc_isa_available(isa, &available), POSENC_OK);
  if (!available) GTEST_SKIP() << "this CPU has no " << posenc_isa_name(isa) << " path";
  std::vector<float> first;
  struct Run {
    int threads;
    bool one_thread_teams;
  };
  // 0: OpenMP's default (scripts/test.sh runs these again with
  // OMP_NUM_THREADS=4, above the cores).
  for (const Run run :
       {Run{1, false}, Run{2, false}, Run{3, false}, Run{2, false}, Run{3, true}, Run{0, false}}) {
    const int threads = run.threads;
    const OneThreadTeams teams(run.one_thread_teams);
    posenc_context* raw = nullptr;
    const posenc_status made = posenc_context_create(isa, threads, &raw);
    if (made == POSENC_ERROR_UNSUPPORTED) GTEST_SKIP() << posenc_last_error();
    ASSERT_EQ(made, POSENC_OK) << posenc_last_error();
    const std::unique_ptr<posenc_context, void (*)(posenc_context*)> context(
        raw, posenc_context_destroy);
    // A fresh problem for each call: an op in place changes its input.
    const cases::Problem problem = c.make(Size::test);
    const posenc_status status = problem.run(context.get());
    if (status == POSENC_ERROR_UNSUPPORTED) GTEST_SKIP() << posenc_last_error();
    ASSERT_EQ(status, POSENC_OK) << posenc_last_error();
    const std::vector<float> out = problem.output();
    if (first.empty()) {
      const std::vector<double> want = problem.reference();
      ASSERT_EQ(out.size(), want.size());
      EXPECT_TRUE(all_close(out.data(), want, c.tolerance, 0.0));
      first = out;
      continue;
    }
    ASSERT_EQ(out.size(), first.size());
    EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)), 0)
        << "with " << threads << " threads" << (run.one_thread_teams ? " on teams of one" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Every, Cases,
                         ::testing::Combine(::testing::Range<size_t>(0, every_case().size()),
                                            ::testing::ValuesIn(kCompiledIsas)),
                         param_name);

// A speedup is only meaningful if the baseline computes the same result: each
// baseline writes the problem's output, which must match the reference too,
// up to fp32 rounding and the error its own way allows.
TEST(CaseBaselines, ComputeTheReferenceResult) {
  constexpr double kBaselineTolerance = 2e-4;
  for (const Case& c : every_case()) {
    const cases::Problem problem = c.make(Size::test);
    if (!problem.baseline) continue;
    SCOPED_TRACE(c.op + " " + c.test_shape + " the " + c.baseline_name + " way");
    problem.baseline();
    const std::vector<float> out = problem.output();
    const std::vector<double> want = problem.reference();
    ASSERT_EQ(out.size(), want.size());
    EXPECT_TRUE(all_close(out.data(), want,
                           std::max(c.tolerance, kBaselineTolerance) + problem.baseline_error, 0.0));
  }
}

TEST(CaseList, EveryFamilyHasCasesForEachProgramAndTagsAreKnown) {
  const std::set<std::string> tags{"check", "demo", "bench"};
  std::set<std::string> names;
  for (const cases::Family& family : cases::families()) {
    std::set<std::string> family_tags;
    for (const Case& c : family.cases()) {
      EXPECT_EQ(c.family, family.name) << c.op;
      EXPECT_TRUE(names.insert(c.op + " " + c.shape + " / " + c.test_shape).second)
          << "twice: " << c.op << " " << c.shape;
      for (const std::string& tag : c.tags) {
        EXPECT_EQ(tags.count(tag), 1u) << c.op << ": " << tag;
        family_tags.insert(tag);
      }
      // A checked case is checked at the size it names.
      if (c.has_tag("check")) {
        EXPECT_EQ(c.shape, c.test_shape) << c.op;
      }
    }
    EXPECT_EQ(family_tags, tags) << family.name;
  }
}

TEST(CaseInputs, ProblemsAskingAtOnceShareOneCopy) {
  const cases::Shared<float> a = cases::shared_floats(100, 7);
  EXPECT_EQ(cases::shared_floats(100, 7), a);  // while `a` lives
  EXPECT_NE(cases::shared_floats(100, 8), a);
  EXPECT_EQ(*a, cases::seeded_floats(100, 7));
  // Rounded to bf16 and bf16 bits are inputs of their own, with the same values.
  EXPECT_NE(cases::shared_bf16_values(100, 7), a);
  EXPECT_EQ(*cases::shared_bf16_values(100, 7), cases::rounded_to_bf16(*a));
  EXPECT_EQ(*cases::shared_bf16_bits(100, 7), cases::to_bf16(*a));
}

}  // namespace
}  // namespace posenc::test
