// The AVX2 with FMA path: compiled with only this ISA's flags (cmake/PosencIsa.cmake).
#include "arch/arch_tables.hpp"
#include "kernels/make_kernel_table.hpp"

namespace posenc::arch {

namespace {
// Constant-initialized: no code of this ISA runs before the CPU is checked.
constexpr KernelTable kTable = make_kernel_table<xsimd::fma3<xsimd::avx2>>();
}  // namespace

const KernelTable& avx2_kernels() { return kTable; }

}  // namespace posenc::arch
