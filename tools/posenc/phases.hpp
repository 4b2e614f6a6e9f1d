// Where a case's calls spend their time: the phases the attention marks
// (runtime/phase_times.hpp), summed over the threads, as the lines `posenc
// bench --phases` prints under a row.
#pragma once

#include <string>

#include "cases/case.hpp"
#include "posenc/core.h"

namespace posenc::cli {

// Times `repeats` calls of problem (after one untimed) with the phase sums
// on; "" if a call fails (the row says why).
std::string phase_breakdown(const cases::Problem& problem, posenc_context* context, int repeats);

}  // namespace posenc::cli
