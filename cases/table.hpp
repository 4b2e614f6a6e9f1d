// The rows of `posenc check`, `posenc demo` and `posenc bench`: a case's
// problem checked against its reference or timed on one context. A call that
// returns anything but POSENC_OK is never timed nor counted as a pass: its row
// says why it failed.
#pragma once

#include <string>
#include <vector>

#include "cases/case.hpp"
#include "cases/timing/metrics.hpp"

namespace posenc::cases {

// Why the last call failed, as a row says it: "unsupported on this CPU: "
// and posenc_last_error() for POSENC_ERROR_UNSUPPORTED, else the status
// string and the message.
std::string failure_reason(posenc_status status);

struct Checked {
  posenc_status status = POSENC_OK;
  std::string failure;    // failure_reason(status) if the call failed
  double max_error = 0;   // against the reference, if it ran
  double tolerance = 0;
  bool skipped() const { return status == POSENC_ERROR_UNSUPPORTED; }
  bool passed() const { return status == POSENC_OK && max_error <= tolerance; }
};
// Runs the problem once and compares its output with the reference.
Checked check_problem(const Problem& problem, double tolerance, posenc_context* context);

struct Timed {
  std::string failure;  // failure_reason of a failed call; empty if timed
  double seconds = 0;   // median of the repeats
};
// One warm-up call, then the median of `repeats`; stops at the first call
// that fails.
Timed time_problem(const Problem& problem, posenc_context* context, int repeats);

// How wide the op and shape columns must be for `cases` at `size` (at least
// as wide as the headings "op" and "shape").
struct ColumnWidths {
  int op, shape;
};
ColumnWidths column_widths(const std::vector<Case>& cases, Size size);

// Each row ends with a newline.
std::string check_header(const ColumnWidths& widths);
std::string check_row(const Case& c, Size size, const char* isa, const Checked& checked,
                      const ColumnWidths& widths);
// The demo's check lines: "  op shape  max error E (tolerance T)".
std::string demo_check_row(const Case& c, Size size, const Checked& checked,
                           const ColumnWidths& widths);
// The demo's timed rows: ms and the speedup over the baseline (0: none).
std::string demo_header(const ColumnWidths& widths);
std::string demo_row(const Case& c, const char* isa, const Timed& timed,
                     double baseline_seconds, const ColumnWidths& widths);
// `posenc bench` as a table, or as JSON objects ("error" in failed rows).
std::string bench_header(const ColumnWidths& widths);
std::string bench_row(const Case& c, const char* isa, const Timed& timed, const CaseMetrics& m,
                      const ColumnWidths& widths);
std::string bench_json_row(const Case& c, const char* isa, const Timed& timed,
                           const CaseMetrics& m);

}  // namespace posenc::cases
