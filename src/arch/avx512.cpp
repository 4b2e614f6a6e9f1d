// The AVX-512 F/CD/DQ/BW/VL path: compiled with only this ISA's flags (cmake/PosencIsa.cmake).
#include "arch/arch_tables.hpp"
#include "kernels/make_kernel_table.hpp"

namespace posenc::arch {

namespace {

constexpr KernelTable avx512_table() {
  KernelTable table = make_kernel_table<xsimd::avx512bw>();
  table.attention.softmax_block_avx512_bf16 = &softmax_block_avx512_bf16;
  return table;
}

// Constant-initialized: no code of this ISA runs before the CPU is checked.
constexpr KernelTable kTable = avx512_table();

}  // namespace

const KernelTable& avx512_kernels() { return kTable; }

}  // namespace posenc::arch
