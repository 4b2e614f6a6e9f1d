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
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cases/case.hpp"
#include "cases/table.hpp"
#include "cases/timing/machine.hpp"
#include "cases/values.hpp"
#include "compare.hpp"
#include "posenc/posenc.h"
#include "reference/relative.hpp"
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
      if (problem.error_units) {
        EXPECT_LE(cases::max_error(out, want, problem.error_units(want)), c.tolerance)
            << "in units of the error_units";
      } else {
        EXPECT_TRUE(all_close(out.data(), want, c.tolerance, 0.0));
      }
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
    // A bf16 attention's baseline is the fp32 call (its tolerance is in error_units).
    const double tolerance =
        problem.error_units ? kBaselineTolerance : std::max(c.tolerance, kBaselineTolerance);
    EXPECT_TRUE(all_close(out.data(), want, tolerance + problem.baseline_error, 0.0));
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

// --filter's parts: a shape's commas inside [...] separate none (each part of
// "mask-bf16[1,4,1,T]" alone, "4" among them, would match dozens of cases).
TEST(CaseSelect, CommasInsideBracketsDoNotSplitTheFilter) {
  EXPECT_EQ(cases::filter_parts("T2048 d128,mask[2,1,T,T],C512"),
            (std::vector<std::string>{"T2048 d128", "mask[2,1,T,T]", "C512"}));
  const std::string mask = "mask-bf16[1,4,1,T]";
  const std::vector<Case> masked = cases::select(every_case(), "", mask);
  ASSERT_FALSE(masked.empty());
  for (const Case& c : masked) EXPECT_NE(c.shape.find(mask), std::string::npos) << c.shape;
  // Commas outside brackets still give either part's cases.
  const size_t either = cases::select(every_case(), "", "T2048 d128," + mask).size();
  EXPECT_EQ(either, cases::select(every_case(), "", "T2048 d128").size() + masked.size());
}

// The spaces around a part are not its own ("rope, skew" is rope or skew),
// and a part no case contains is named, so that none is dropped unseen.
TEST(CaseSelect, PartsLoseTheirSpacesAndThoseMatchingNothingAreNamed) {
  EXPECT_EQ(cases::filter_parts(" rope,  skew d64 ,"),
            (std::vector<std::string>{"rope", "skew d64", ""}));
  const std::vector<Case> all = every_case();
  EXPECT_EQ(cases::select(all, "", "rope, T2048 d128").size(),
            cases::select(all, "", "rope").size() + cases::select(all, "", "T2048 d128").size());
  EXPECT_EQ(cases::unmatched_parts(all, "", "rope, no such row,T2048"),
            (std::vector<std::string>{"no such row"}));
  EXPECT_EQ(cases::unmatched_parts(all, "check", "rel_to_abs,T2048 d128"),
            (std::vector<std::string>{"T2048 d128"}));
  EXPECT_TRUE(cases::unmatched_parts(all, "", "").empty());
}

// A bench row's JSON has null where its table shows "-" (no FLOPs, no
// baseline, no GEMM rate for the op's type) and for inf and NaN.
TEST(CaseJson, NullWhereTheTableShowsADashAndForInfOrNan) {
  Case c;
  c.op = "fake_op";
  c.shape = c.test_shape = "N7";
  c.baseline_name = "naive";
  const cases::Timed timed{"", 1e-3};
  cases::CaseMetrics memory_bound{};
  memory_bound.seconds = 1e-3;
  memory_bound.gbytes_per_s = 2.0;
  memory_bound.fraction_of_copy = 0.5;
  memory_bound.bound_ratio = 0.25;
  const std::string json = cases::bench_json_row(c, "avx2", timed, memory_bound);
  for (const char* null : {"\"gflops\": null", "\"fraction_of_gemm\": null", "\"baseline\": null",
                           "\"speedup\": null"}) {
    EXPECT_NE(json.find(null), std::string::npos) << null << " in " << json;
  }
  EXPECT_NE(json.find("\"fraction_of_bound\": 0.2500"), std::string::npos) << json;

  // A bf16 op that computes, on a machine without a bf16 GEMM (rate 0).
  cases::Problem problem;
  problem.bytes = problem.write_bytes = 1e6;
  problem.flops = 1e9;
  problem.gemm_type = POSENC_BF16;
  const cases::MachineFigures no_bf16_gemm{100.0, 0.0, 10.0, 10.0};
  const cases::CaseMetrics m =
      cases::metrics_for(problem, 1e-3, cases::CaseReferences{0.0, 1e-4, 1e-4}, no_bf16_gemm);
  const std::string computing = cases::bench_json_row(c, "avx2", timed, m);
  const std::string row =
      cases::bench_row(c, "avx2", timed, m, cases::column_widths({c}, Size::full));
  for (const std::string& text : {computing, row}) {
    EXPECT_EQ(text.find("inf"), std::string::npos) << text;
    EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  }
  EXPECT_NE(computing.find("\"gflops\": 1000.000"), std::string::npos) << computing;
  EXPECT_NE(computing.find("\"fraction_of_gemm\": null"), std::string::npos) << computing;
  EXPECT_NE(computing.find("\"fraction_of_bound\": null"), std::string::npos) << computing;

  cases::CaseMetrics infinite = memory_bound;
  infinite.gbytes_per_s = std::numeric_limits<double>::infinity();
  infinite.fraction_of_copy = std::numeric_limits<double>::quiet_NaN();
  const std::string guarded = cases::bench_json_row(c, "avx2", timed, infinite);
  EXPECT_NE(guarded.find("\"gbytes_per_s\": null"), std::string::npos) << guarded;
  EXPECT_NE(guarded.find("\"fraction_of_memcpy\": null"), std::string::npos) << guarded;
}

// The FLOPs of the case `op` of shape `shape` at `size`.
double case_flops(const std::string& op, const std::string& shape, Size size = Size::full) {
  for (const Case& c : every_case()) {
    if (c.op == op && c.shape_at(size) == shape) return c.make(size).flops;
  }
  ADD_FAILURE() << "no case " << op << " " << shape;
  return 0.0;
}

// The attention's FLOPs, counted from its definition: per head, each
// visible (query, key) pair's q . k and p v (2 d + 2 d); each query against
// each of ABSOLUTE's kv_len table rows (2 d), or each of the 1D table's
// rows (2 d), and the probabilities against each value-table row (2 d).
TEST(CaseFlops, AttentionCountsItsProductsFromTheDefinition) {
  const double d = 16, absolute = 2.0 * 3 * (37 * 41 * 4 * d + 37 * 41 * 2 * d);
  EXPECT_EQ(case_flops("attention_f32", "absolute B2 H3 Tq37 Tk41 d16"), absolute);
  // Causal from offset 297: query i sees keys 0..297 + i; 2 * 64 + 1 rows.
  const double dh = 64, rows = 129;
  double pairs = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 300; ++j) pairs += j <= 297 + i ? 1 : 0;
  }
  EXPECT_EQ(case_flops("attention_1d_f32", "1D B2 H4 Tq3 Tk300 d64 BTHD @297 K64 causal values"),
            2.0 * 4 * (pairs * 4 * dh + 3 * rows * 2 * dh + 3 * rows * 2 * dh));
}

// relative_logits_1d's FLOPs: a dot product (2 d) for each distinct table
// row that a query's visible keys read (reference::table_row_1d).
TEST(CaseFlops, RelativeLogits1dCountsTheRowsEachQueryReads) {
  const int64_t queries = 257, keys = 257, offset = 5, clip = 40;
  double rows = 0;
  for (int64_t i = 0; i < queries; ++i) {
    std::set<int64_t> read;
    for (int64_t j = 0; j <= std::min(offset + i, keys - 1); ++j) {
      read.insert(reference::table_row_1d(offset, queries, clip, i, j));
    }
    rows += double(read.size());
  }
  EXPECT_EQ(case_flops("relative_logits_1d", "B1 H2 T257 d80 @5 clip40 causal"),
            2.0 * 2 * rows * 80);
  // Unclipped and not causal: each query reads one row per key.
  EXPECT_EQ(case_flops("relative_logits_1d", "B1 H3 T131 d48", Size::test),
            2.0 * 3 * 131 * 131 * 48);
}

// bench and info report, and the machine's figures run on, the threads the
// ops use: never more than POSENC_MAX_THREADS, whatever OpenMP's default.
TEST(CaseThreads, AtMostTheOpsBound) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(POSENC_MAX_THREADS + 1);
  EXPECT_EQ(cases::op_threads(), POSENC_MAX_THREADS);
  omp_set_num_threads(2);
  EXPECT_EQ(cases::op_threads(), 2);
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace posenc::test
