// The process-wide ISA cap, shared by posenc's kernels and oneDNN.
#pragma once

#include "posenc/core.h"

namespace posenc {

// Rank of a path for comparisons: baseline < avx2 < avx512; neon is the only
// aarch64 path and equals baseline there. AUTO ranks above everything.
int isa_rank(posenc_isa isa);

// The cap in force (AUTO when uncapped). The first call reads POSENC_MAX_ISA
// and applies it to oneDNN; an unknown value there is reported on stderr once
// and ignored.
posenc_isa max_isa();

// Sets the cap; throws posenc::Error if oneDNN can no longer be capped.
void set_max_isa(posenc_isa isa);

// The best path the CPU supports under the cap (never AUTO).
posenc_isa best_isa_under_cap();

// Resolves a requested path (AUTO or explicit) against CPU and cap; throws
// posenc::Error naming `argument` when it cannot run.
posenc_isa resolve_isa(posenc_isa requested, const char* argument);

}  // namespace posenc
