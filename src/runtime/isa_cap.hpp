// The process-wide ISA cap, shared by posenc's kernels and oneDNN.
#pragma once

#include <string>

#include "posenc/core.h"

namespace posenc {

// Rank of a path for comparisons under the cap (the ISA table's, runtime/
// compiled_isas.hpp). AUTO ranks above everything.
int isa_rank(posenc_isa isa);

// The names POSENC_MAX_ISA and posenc_isa_from_name accept, for messages:
// "auto, baseline, avx2, ...".
std::string isa_names();

// The path named `name` (AUTO for "auto"), case-insensitively; false for
// an unknown name. Allocates nothing and sets no last-error message.
bool isa_of_name(const char* name, posenc_isa* isa) noexcept;

// What the environment variable POSENC_MAX_ISA asks for: kNone when it is
// unset or empty, kNamed with the path (or AUTO) in *isa, kUnknown for a name
// the library does not know. The library warns about kUnknown and runs
// uncapped; the posenc program refuses it.
enum class EnvironmentCap { kNone, kNamed, kUnknown };
EnvironmentCap environment_isa_cap(posenc_isa* isa) noexcept;

// The cap in force (AUTO when uncapped). The first call reads POSENC_MAX_ISA
// and applies it to oneDNN; an unknown value there is reported on stderr once
// and ignored.
posenc_isa isa_cap();

// Sets the cap; throws posenc::Error if oneDNN can no longer be capped.
void set_isa_cap(posenc_isa isa);

// The best path the CPU supports under the cap (never AUTO).
posenc_isa best_isa_under_cap();

// Resolves a requested path (AUTO or a named one: posenc_isa_name is not
// null) against CPU and cap; throws posenc::Error naming `argument` when it
// cannot run.
posenc_isa resolve_isa(posenc_isa requested, const char* argument);

}  // namespace posenc
