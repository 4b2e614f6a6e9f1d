// Rounding up in integers, for the ops' blocks and tasks.
#pragma once

#include <cstdint>

namespace posenc {

// a / b rounded up, for a >= 0 and b >= 1 (a + b - 1 must not overflow).
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a rounded up to a multiple of b.
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace posenc
