// The rows of `posenc check`, `posenc demo` and `posenc bench` for a case
// whose call fails: no time, no speedup, no pass; the row says why.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cases/case.hpp"
#include "cases/table.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

using cases::Case;
using cases::Size;

// A case whose calls return `status` from the `fail_from`-th call on, with
// the message of a real failed call in posenc_last_error().
struct FailingCase {
  Case c;
  cases::Problem problem;
  int calls = 0;
  std::string message;

  FailingCase(posenc_status status, int fail_from) {
    c.family = "absolute";
    c.op = "fake_op";
    c.shape = c.test_shape = "N7";
    c.baseline_name = "naive";
    problem.run = [this, status, fail_from](posenc_context*) {
      if (++calls < fail_from) return POSENC_OK;
      float out[4];
      posenc_sinusoid_table(nullptr, -1, 4, 0, 10000.0, POSENC_SINCOS_INTERLEAVED, POSENC_F32,
                            out);  // length -1: leaves a message naming "length"
      message = posenc_last_error();
      return status;
    };
    problem.output = [] { return std::vector<float>{1.0f}; };
    problem.reference = [] { return std::vector<double>{1.0}; };
    problem.baseline = [] {};
  }
};

TEST(CaseTable, AnUnsupportedCallIsNotTimedAndItsRowsSayWhy) {
  FailingCase f(POSENC_ERROR_UNSUPPORTED, 1);
  const cases::Timed timed = cases::time_problem(f.problem, nullptr, 5);
  EXPECT_EQ(f.calls, 1);  // no repeats after the failed warm-up
  ASSERT_NE(f.message.find("length"), std::string::npos) << f.message;
  const std::string why = "unsupported on this CPU: " + f.message;
  EXPECT_EQ(timed.failure, why);
  EXPECT_EQ(timed.seconds, 0.0);

  const cases::ColumnWidths widths = cases::column_widths({f.c}, Size::full);
  // A baseline time is at hand, yet the row gives no speedup.
  EXPECT_EQ(cases::demo_row(f.c, "avx2", timed, 0.02, widths),
            "  fake_op N7    avx2       " + why + "\n");
  EXPECT_EQ(cases::bench_row(f.c, "avx2", timed, cases::CaseMetrics{}, widths),
            "fake_op N7    avx2       " + why + "\n");
  const std::string json = cases::bench_json_row(f.c, "avx2", timed, cases::CaseMetrics{});
  EXPECT_NE(json.find("\"median_ms\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"speedup\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"error\": \"" + why + "\"}"), std::string::npos) << json;
}

TEST(CaseTable, AnUnsupportedCheckIsSkippedNotPassed) {
  FailingCase f(POSENC_ERROR_UNSUPPORTED, 1);
  const cases::Checked checked = cases::check_problem(f.problem, 0.0, nullptr);
  EXPECT_TRUE(checked.skipped());
  EXPECT_FALSE(checked.passed());
  const cases::ColumnWidths widths = cases::column_widths({f.c}, Size::test);
  EXPECT_EQ(cases::check_row(f.c, Size::test, "baseline", checked, widths),
            "fake_op N7    baseline   skipped: unsupported on this CPU: " + f.message + "\n");
}

TEST(CaseTable, OtherErrorsFailWithTheirStatus) {
  FailingCase f(POSENC_ERROR_INVALID_ARGUMENT, 1);
  const cases::Checked checked = cases::check_problem(f.problem, 0.0, nullptr);
  EXPECT_FALSE(checked.skipped());
  EXPECT_FALSE(checked.passed());
  const std::string why =
      std::string(posenc_status_string(POSENC_ERROR_INVALID_ARGUMENT)) + ": " + f.message;
  const cases::ColumnWidths widths = cases::column_widths({f.c}, Size::test);
  EXPECT_EQ(cases::check_row(f.c, Size::test, "avx2", checked, widths),
            "fake_op N7    avx2       FAIL: " + why + "\n");
  EXPECT_EQ(cases::demo_row(f.c, "avx2", cases::time_problem(f.problem, nullptr, 3), 0.02, widths),
            "  fake_op N7    avx2       " + why + "\n");
}

TEST(CaseTable, ACallThatFailsWhileTimedStopsTheRow) {
  FailingCase f(POSENC_ERROR_UNSUPPORTED, 3);  // the warm-up and one repeat succeed
  const cases::Timed timed = cases::time_problem(f.problem, nullptr, 5);
  EXPECT_EQ(timed.failure, "unsupported on this CPU: " + f.message);
  EXPECT_EQ(timed.seconds, 0.0);
}

TEST(CaseTable, APassingCheckAndATimedRowKeepTheirColumns) {
  FailingCase f(POSENC_OK, 1);
  const cases::ColumnWidths widths = cases::column_widths({f.c}, Size::full);
  const cases::Checked checked = cases::check_problem(f.problem, 0.0, nullptr);
  EXPECT_TRUE(checked.passed());
  EXPECT_EQ(cases::check_row(f.c, Size::test, "avx2", checked, widths),
            "fake_op N7    avx2                 0            0  pass\n");
  cases::Timed timed;
  timed.seconds = 0.004;
  EXPECT_EQ(cases::demo_row(f.c, "avx2", timed, 0.010, widths),
            "  fake_op N7    avx2          4.000  2.5x over the naive way\n");
}

// --filter and --tag: a filter's comma-separated parts are alternatives,
// each a substring of "op shape".
TEST(CaseTable, SelectTakesEitherPartOfAFilter) {
  auto named = [](const std::string& op, const std::string& shape, const std::string& tag) {
    Case c;
    c.op = op;
    c.shape = shape;
    c.tags = {tag};
    return c;
  };
  const std::vector<Case> all{named("attention_f32", "plain B1 H32 T2048 d128", "bench"),
                              named("attention_bf16", "plain B1 H32 T2048 d128", "check"),
                              named("bottleneck_mhsa", "B8 C512 14x14 H4 d128", "bench"),
                              named("rope_qk", "B1 H32 T2048 D128", "bench")};
  auto ops = [&](const std::string& tag, const std::string& filter) {
    std::string joined;
    for (const Case& c : cases::select(all, tag, filter)) joined += c.op + ";";
    return joined;
  };
  EXPECT_EQ(ops("", ""), "attention_f32;attention_bf16;bottleneck_mhsa;rope_qk;");
  EXPECT_EQ(ops("bench", ""), "attention_f32;bottleneck_mhsa;rope_qk;");
  EXPECT_EQ(ops("", "T2048 d128"), "attention_f32;attention_bf16;");
  EXPECT_EQ(ops("", "bf16 plain,C512 14x14"), "attention_bf16;bottleneck_mhsa;");
  EXPECT_EQ(ops("bench", "bf16 plain,C512 14x14"), "bottleneck_mhsa;");
  EXPECT_EQ(ops("", "nothing,rope"), "rope_qk;");
  EXPECT_EQ(ops("", "nothing,else"), "");
}

}  // namespace
}  // namespace posenc::test
