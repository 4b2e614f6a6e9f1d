// The self-test behind `posenc check` and `posenc demo`: each op family
// contributes checks that run an op through the C ABI on one context and
// measure its largest deviation from the reference loops; a failed call
// throws posenc::Error (posenc::check).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "posenc/core.hpp"
#include "posenc/posenc.h"

namespace posenc::cli {

struct CheckResult {
  double max_error;  // largest |got - want| over the output
  double tolerance;  // the bound the op promises on this input
};

struct Check {
  std::string name;
  std::function<CheckResult(posenc_context*)> run;
};

// sin(0.61 i + phase): smooth, O(1) inputs that differ from call to call.
std::vector<float> signal(size_t count, float phase);

// Largest |got[i] - want[i]|.
double max_abs_error(const float* got, const std::vector<double>& want);

std::vector<Check> absolute_checks();
std::vector<Check> attention_checks();
std::vector<Check> relative_checks();
std::vector<Check> rope_checks();

}  // namespace posenc::cli
