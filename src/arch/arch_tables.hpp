// One function per compiled ISA path, each defined in its own translation
// unit compiled with that ISA's flags (and only those).
#pragma once

#include <cstdint>

#include "kernels/kernel_table.hpp"

namespace posenc::arch {

#if defined(__x86_64__)
const KernelTable& baseline_kernels();
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();
// The AVX-512 table with the kernels that use AVX512-BF16 (for processors
// that have it): AttentionKernels::softmax_block from src/arch/avx512_bf16.cpp.
const KernelTable& avx512_bf16_kernels();
float softmax_block_avx512_bf16(float* scores, int64_t valid, int64_t n, float block_max,
                                float scale, float* row_max, float* row_sum,
                                uint16_t* probs_bf16);
#elif defined(__aarch64__)
const KernelTable& neon_kernels();
#endif

}  // namespace posenc::arch
