#include "bench_case.hpp"

namespace posenc::bench {

CaseList all_cases() {
  CaseList cases;
  for (auto family : {absolute_cases, attention_cases, relative_cases, rope_cases}) {
    for (BenchCase& c : family()) cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace posenc::bench
