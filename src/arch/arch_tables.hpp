// The kernel table of each compiled ISA path, `<path>_kernels()`, defined in
// src/arch/<path>.cpp, a translation unit compiled with that ISA's flags (and
// only those). The paths and extensions are those cmake/PosencIsa.cmake lists:
// the declarations come from the header it generates.
#pragma once

#include <cstdint>

#include "kernels/kernel_table.hpp"

namespace posenc::arch {

#define POSENC_COMPILED_PATH(path) const KernelTable& path##_kernels();
// An extension's table is its path's table with the kernels that use the
// extension's instructions, e.g. avx512_bf16_kernels() in src/arch/avx512.cpp.
#define POSENC_PATH_EXTENSION(path, extension) const KernelTable& extension##_kernels();
#include "posenc_compiled_paths.inc"
#undef POSENC_COMPILED_PATH
#undef POSENC_PATH_EXTENSION

// AttentionKernels::softmax_block rounding with AVX512-BF16 (src/arch/avx512_bf16.cpp).
float softmax_block_avx512_bf16(float* scores, int64_t valid, int64_t n, float block_max,
                                float scale, float* row_max, float* row_sum, uint16_t* probs_bf16,
                                const PrefetchRows& next);
// AttentionKernels::decode_scores_bf16 and decode_values_bf16 with AVX512-BF16's
// pair dot products (the latter rounding the probabilities to bf16).
void decode_scores_bf16_avx512_bf16(const uint16_t* q, int64_t ldq, int64_t rows, const uint16_t* k,
                                    int64_t ldk, int64_t keys, int64_t dim, float alpha,
                                    float* scores, int64_t ld_scores);
void decode_values_bf16_avx512_bf16(const float* probs, int64_t ld_probs, int64_t rows,
                                    const uint16_t* v, int64_t ldv, int64_t keys, int64_t dim,
                                    bool accumulate, float* acc, int64_t ld_acc);

}  // namespace posenc::arch
