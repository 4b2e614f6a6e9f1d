// Wall-clock medians for the demo.
#pragma once

#include <functional>

namespace posenc::cli {

// Median seconds of `repeats` runs of fn, after one warm-up run.
double median_seconds(const std::function<void()>& fn, int repeats = 7);

}  // namespace posenc::cli
