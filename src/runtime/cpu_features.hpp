// What the processor and the operating system support, ignoring any cap.
#pragma once

#include "posenc/core.h"

namespace posenc {

// True if this build has the path `isa` and the CPU and OS can run it.
bool cpu_supports(posenc_isa isa);

// True if the CPU has AVX512-BF16 (the AVX-512 path's bf16 rounding).
bool cpu_has_avx512_bf16();

}  // namespace posenc
