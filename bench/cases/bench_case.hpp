// A benchmark case: one op on one shape with its inputs, what one call moves
// and computes, and the other way of computing it (naive, pad/reshape or
// unfused) for the speedup. The same cases feed Google Benchmark
// (posenc_bench) and the `posenc bench` table, so each is defined once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "posenc/posenc.h"

namespace posenc::bench {

struct BenchCase {
  std::string op;     // e.g. "add_sinusoid"
  std::string shape;  // e.g. "B8 T1024 D512"
  double bytes = 0;        // bytes read plus written by one call
  double write_bytes = 0;  // bytes written by one call (for the memset bound)
  double flops = 0;        // floating-point operations of one call (0: memory-bound op)
  std::function<void(posenc_context*)> run;
  std::string baseline_name;       // "naive", "pad/reshape", "unfused"; empty if none
  std::function<void()> baseline;  // the same result computed that way
};

using CaseList = std::vector<BenchCase>;

CaseList absolute_cases();
CaseList attention_cases();
CaseList relative_cases();
CaseList rope_cases();

// Every family's cases.
CaseList all_cases();

// How wide a table's op and shape columns must be for `cases` (at least as
// wide as the headings "op" and "shape").
struct ColumnWidths {
  int op, shape;
};
ColumnWidths column_widths(const CaseList& cases);

}  // namespace posenc::bench
