// The C ABI's posenc_context, and the resolved form every op runs with.
#pragma once

#include "kernels/kernel_table.hpp"
#include "posenc/core.h"

struct posenc_context {
  posenc_isa isa;    // resolved at creation, never AUTO
  int num_threads;   // 0: OpenMP's default at call time
};

namespace posenc {

// What an op needs from a context: its kernels and its thread count.
struct ExecContext {
  posenc_isa isa;
  const KernelTable* kernels;
  int num_threads;  // >= 1
};

// Resolves a context (NULL: the default, the best path under the cap).
ExecContext resolve_context(const posenc_context* context);

}  // namespace posenc
