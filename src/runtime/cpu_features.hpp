// What the processor and the operating system support, ignoring any cap.
#pragma once

#include "posenc/core.h"

namespace posenc {

// True if this build has the path `isa` and the CPU and OS can run it.
bool cpu_supports(posenc_isa isa);

}  // namespace posenc
