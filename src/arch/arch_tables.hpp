// One function per compiled ISA path, each defined in its own translation
// unit compiled with that ISA's flags (and only those).
#pragma once

#include "kernels/kernel_table.hpp"

namespace posenc::arch {

#if defined(__x86_64__)
const KernelTable& baseline_kernels();
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();
#elif defined(__aarch64__)
const KernelTable& neon_kernels();
#endif

}  // namespace posenc::arch
