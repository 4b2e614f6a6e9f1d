// The SSE2, the x86-64 baseline path: compiled with only this ISA's flags (cmake/PosencIsa.cmake).
#include "arch/arch_tables.hpp"
#include "kernels/make_kernel_table.hpp"

namespace posenc::arch {

namespace {
// Constant-initialized: no code of this ISA runs before the CPU is checked.
constexpr KernelTable kTable = make_kernel_table<xsimd::sse2>();
}  // namespace

const KernelTable& baseline_kernels() { return kTable; }

}  // namespace posenc::arch
