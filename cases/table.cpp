#include "cases/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "cases/timing/machine.hpp"
#include "cases/values.hpp"

namespace posenc::cases {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list args, copy;
  va_start(args, fmt);
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string text(size_t(std::max(length, 0)) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), fmt, args);
  va_end(args);
  text.pop_back();
  return text;
}

std::string json_string(const std::string& text) {
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') {
      quoted += '\\';
      quoted += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      quoted += format("\\u%04x", ch);
    } else {
      quoted += ch;
    }
  }
  return quoted + "\"";
}

// value as JSON: null where the table shows "-" (`shown` false), and for inf
// and NaN, which JSON has no number for.
std::string json_number(double value, int decimals, bool shown = true) {
  return shown && std::isfinite(value) ? format("%.*f", decimals, value) : "null";
}

// "op shape isa" in the table's columns.
std::string lead(const Case& c, Size size, const char* isa, const ColumnWidths& w) {
  return format("%-*s %-*s %-9s", w.op, c.op.c_str(), w.shape, c.shape_at(size).c_str(), isa);
}

}  // namespace

std::string failure_reason(posenc_status status) {
  if (status == POSENC_ERROR_UNSUPPORTED) {
    return std::string("unsupported on this CPU: ") + posenc_last_error();
  }
  return std::string(posenc_status_string(status)) + ": " + posenc_last_error();
}

Checked check_problem(const Problem& problem, double tolerance, posenc_context* context) {
  Checked checked;
  checked.tolerance = tolerance;
  checked.status = problem.run(context);
  if (checked.status != POSENC_OK) {
    checked.failure = failure_reason(checked.status);
    return checked;
  }
  const std::vector<double> want = problem.reference();
  checked.max_error =
      max_error(problem.output(), want,
                problem.error_units ? problem.error_units(want) : std::vector<double>());
  return checked;
}

Timed time_problem(const Problem& problem, posenc_context* context, int repeats) {
  Timed timed;
  posenc_status status = problem.run(context);
  if (status == POSENC_OK) {
    timed.seconds = median_of_runs(
        [&] {
          const posenc_status s = problem.run(context);
          if (status == POSENC_OK) status = s;
        },
        repeats);
  }
  if (status != POSENC_OK) {
    timed.failure = failure_reason(status);
    timed.seconds = 0;
  }
  return timed;
}

ColumnWidths column_widths(const std::vector<Case>& cases, Size size) {
  ColumnWidths widths{2, 5};
  for (const Case& c : cases) {
    widths.op = std::max(widths.op, int(c.op.size()));
    widths.shape = std::max(widths.shape, int(c.shape_at(size).size()));
  }
  return widths;
}

std::string check_header(const ColumnWidths& w) {
  return format("%-*s %-*s %-9s %12s %12s  %s\n", w.op, "op", w.shape, "shape", "isa",
                "max error", "tolerance", "result");
}

std::string check_row(const Case& c, Size size, const char* isa, const Checked& checked,
                      const ColumnWidths& w) {
  const std::string head = lead(c, size, isa, w);
  if (checked.skipped()) return head + "  skipped: " + checked.failure + "\n";
  if (checked.status != POSENC_OK) return head + "  FAIL: " + checked.failure + "\n";
  return head + format(" %12.3g %12.3g  %s\n", checked.max_error, checked.tolerance,
                       checked.passed() ? "pass" : "FAIL");
}

std::string demo_check_row(const Case& c, Size size, const Checked& checked,
                           const ColumnWidths& w) {
  const std::string head =
      format("  %-*s %-*s", w.op, c.op.c_str(), w.shape, c.shape_at(size).c_str());
  if (checked.skipped()) return head + "  skipped: " + checked.failure + "\n";
  if (checked.status != POSENC_OK) return head + "  FAILED: " + checked.failure + "\n";
  return head + format("  max error %.2g (tolerance %.2g)%s\n", checked.max_error,
                       checked.tolerance, checked.passed() ? "" : "  FAIL");
}

std::string demo_header(const ColumnWidths& w) {
  return format("\n  %-*s %-*s %-9s %9s  %s\n", w.op, "op", w.shape, "shape", "isa", "ms",
                "speedup");
}

std::string demo_row(const Case& c, const char* isa, const Timed& timed,
                     double baseline_seconds, const ColumnWidths& w) {
  const std::string head = "  " + lead(c, Size::full, isa, w);
  if (!timed.failure.empty()) return head + "  " + timed.failure + "\n";
  std::string row = head + format(" %9.3f", timed.seconds * 1e3);
  if (baseline_seconds > 0) {
    row += format("  %.1fx over the %s way", baseline_seconds / timed.seconds,
                  c.baseline_name.c_str());
  }
  return row + "\n";
}

std::string bench_header(const ColumnWidths& w) {
  return format("%-*s %-*s %-9s %9s %8s %8s %7s %9s %8s  %s\n", w.op, "op", w.shape, "shape",
                "isa", "median ms", "GFLOP/s", "GB/s", "of GEMM", "of memcpy", "of bound",
                "speedup");
}

std::string bench_row(const Case& c, const char* isa, const Timed& timed, const CaseMetrics& m,
                      const ColumnWidths& w) {
  const std::string head = lead(c, Size::full, isa, w);
  if (!timed.failure.empty()) return head + "  " + timed.failure + "\n";
  std::string speedup = "-", gflops = "-", of_gemm = "-", of_bound = "-";
  if (m.speedup > 0) speedup = format("%.1fx %s", m.speedup, c.baseline_name.c_str());
  if (m.gflops > 0) gflops = format("%.1f", m.gflops);
  if (m.fraction_of_gemm > 0) of_gemm = format("%.0f%%", 100 * m.fraction_of_gemm);
  if (m.bound_ratio > 0) of_bound = format("%.0f%%", 100 * m.bound_ratio);
  return head + format(" %9.3f %8s %8.1f %7s %8.0f%% %8s  %s\n", m.seconds * 1e3, gflops.c_str(),
                       m.gbytes_per_s, of_gemm.c_str(), 100 * m.fraction_of_copy, of_bound.c_str(),
                       speedup.c_str());
}

std::string bench_json_row(const Case& c, const char* isa, const Timed& timed,
                           const CaseMetrics& m) {
  const std::string head = format("{\"op\": %s, \"shape\": %s, \"isa\": %s, ",
                                  json_string(c.op).c_str(), json_string(c.shape).c_str(),
                                  json_string(isa).c_str());
  if (!timed.failure.empty()) {
    const std::string baseline = c.baseline_name.empty() ? "null" : json_string(c.baseline_name);
    return head +
           "\"median_ms\": null, \"gbytes_per_s\": null, \"gflops\": null, "
           "\"fraction_of_gemm\": null, \"fraction_of_memcpy\": null, "
           "\"fraction_of_bound\": null, \"baseline\": " +
           baseline + ", \"speedup\": null, \"error\": " + json_string(timed.failure) + "}";
  }
  const bool has_baseline = m.speedup > 0;
  return head + "\"median_ms\": " + json_number(m.seconds * 1e3, 4) +
         ", \"gbytes_per_s\": " + json_number(m.gbytes_per_s, 3) +
         ", \"gflops\": " + json_number(m.gflops, 3, m.gflops > 0) +
         ", \"fraction_of_gemm\": " + json_number(m.fraction_of_gemm, 4, m.fraction_of_gemm > 0) +
         ", \"fraction_of_memcpy\": " + json_number(m.fraction_of_copy, 4) +
         ", \"fraction_of_bound\": " + json_number(m.bound_ratio, 4, m.bound_ratio > 0) +
         ", \"baseline\": " + (has_baseline ? json_string(c.baseline_name) : "null") +
         ", \"speedup\": " + json_number(m.speedup, 3, has_baseline) + "}";
}

}  // namespace posenc::cases
