// The kernel table of each compiled ISA path.
#pragma once

#include "kernels/kernel_table.hpp"
#include "posenc/core.h"

namespace posenc {

// The table for `isa` (not AUTO; BASELINE means NEON on aarch64), or nullptr
// if this build has no such path. Does not check the CPU or the cap.
const KernelTable* compiled_kernel_table(posenc_isa isa);

// The table ops run `isa` with: compiled_kernel_table(isa), with the kernels
// that use extensions beyond the path's (AVX512-BF16) where the CPU has them.
// The same results either way.
const KernelTable* kernel_table_for_cpu(posenc_isa isa);

}  // namespace posenc
