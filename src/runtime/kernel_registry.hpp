// The kernel table of each compiled ISA path.
#pragma once

#include "kernels/kernel_table.hpp"
#include "posenc/core.h"
#include "runtime/cpu_features.hpp"

namespace posenc {

// The table for `isa` (not AUTO; BASELINE means NEON on aarch64), or nullptr
// if this build has no such path. Does not check the CPU or the cap.
const KernelTable* compiled_kernel_table(posenc_isa isa);

// The table ops run `isa` with: compiled_kernel_table(isa), with the kernels
// that use extensions beyond the path's (AVX512-BF16) where the CPU has them.
// The same results either way.
const KernelTable* kernel_table_for_cpu(posenc_isa isa);

// Whether kernel_table_for_cpu(isa) holds the kernels of the extension
// `features` (AVX512-BF16's beside the AVX-512 path's).
bool runs_extension_kernels(posenc_isa isa, CpuFeatures features);

}  // namespace posenc
