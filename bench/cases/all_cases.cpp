#include "bench_case.hpp"

#include <algorithm>

namespace posenc::bench {

CaseList all_cases() {
  CaseList cases;
  for (auto family : {absolute_cases, attention_cases, relative_cases, rope_cases}) {
    for (BenchCase& c : family()) cases.push_back(std::move(c));
  }
  return cases;
}

ColumnWidths column_widths(const CaseList& cases) {
  ColumnWidths widths{2, 5};
  for (const BenchCase& c : cases) {
    widths.op = std::max(widths.op, int(c.op.size()));
    widths.shape = std::max(widths.shape, int(c.shape.size()));
  }
  return widths;
}

}  // namespace posenc::bench
