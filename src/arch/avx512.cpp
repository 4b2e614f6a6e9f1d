// The AVX-512 F/CD/DQ/BW/VL path: compiled with only this ISA's flags (cmake/PosencIsa.cmake).
#include "arch/arch_tables.hpp"
#include "kernels/make_kernel_table.hpp"

namespace posenc::arch {

namespace {

// Constant-initialized (both tables): no code of this ISA runs before the
// CPU is checked.
constexpr KernelTable kTable = make_kernel_table<xsimd::avx512bw>();

constexpr KernelTable with_avx512_bf16(KernelTable table) {
  table.attention.softmax_block = &softmax_block_avx512_bf16;
  table.attention.decode_scores_bf16 = &decode_scores_bf16_avx512_bf16;
  table.attention.decode_values_bf16 = &decode_values_bf16_avx512_bf16;
  return table;
}

constexpr KernelTable kTableBf16 = with_avx512_bf16(kTable);

}  // namespace

const KernelTable& avx512_kernels() { return kTable; }
const KernelTable& avx512_bf16_kernels() { return kTableBf16; }

}  // namespace posenc::arch
