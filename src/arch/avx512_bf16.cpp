// Kernels of the AVX-512 path that use AVX512-BF16: compiled with the AVX-512
// flags plus -mavx512bf16 (cmake/PosencIsa.cmake), linked after avx512.cpp
// (so inline code the two share keeps the AVX-512 copy), and called only
// where the CPU has AVX512-BF16 (the avx512 row's extension in
// runtime/compiled_isas.hpp).
#include "arch/arch_tables.hpp"
#include "kernels/attention/attention_impl.hpp"
#include "kernels/attention/decode_pairs_impl.hpp"

namespace posenc::arch {

float softmax_block_avx512_bf16(float* scores, int64_t valid, int64_t n, float block_max,
                                float scale, float* row_max, float* row_sum, uint16_t* probs_bf16,
                                const PrefetchRows& next) {
  return kernels::softmax_block<xsimd::avx512bw,
                                &kernels::exp_to_bf16_avx512_bf16<xsimd::avx512bw>>(
      scores, valid, n, block_max, scale, row_max, row_sum, probs_bf16, next);
}

void decode_scores_bf16_avx512_bf16(const uint16_t* q, int64_t ldq, int64_t rows, const uint16_t* k,
                                    int64_t ldk, int64_t keys, int64_t dim, float alpha,
                                    float* scores, int64_t ld_scores) {
  kernels::decode_scores<xsimd::avx512bw, uint16_t, kernels::Bf16PairProducts>(
      q, ldq, rows, k, ldk, keys, dim, alpha, scores, ld_scores);
}

void decode_values_bf16_avx512_bf16(const float* probs, int64_t ld_probs, int64_t rows,
                                    const uint16_t* v, int64_t ldv, int64_t keys, int64_t dim,
                                    bool accumulate, float* acc, int64_t ld_acc) {
  kernels::decode_values<xsimd::avx512bw, uint16_t, kernels::Bf16PairValues>(
      probs, ld_probs, rows, v, ldv, keys, dim, accumulate, acc, ld_acc);
}

}  // namespace posenc::arch
