// Kernels of the fused attention: the online softmax, row scaling, transposes,
// and the products of decoding's few query rows and of small problems.
#pragma once

#include <cstdint>

namespace posenc {

// Rows a caller reads after the one a kernel is on (the next score row, its
// mask row): their lines are prefetched as the kernel reads its own row,
// the same keys of each. A row with null data is skipped; any other must
// hold the keys the kernel reads.
struct PrefetchRows {
  struct Row {
    const void* data = nullptr;
    int64_t bytes_per_key = 0;
  };
  Row rows[2];
};

struct AttentionKernels {
  // One step of the online softmax of a query row over a block of n keys, of
  // which the first `valid` are visible (the rest are masked), block_max
  // being the largest of scores[0, valid), the probabilities being
  // exp(scale (score - max)) (scale > 0). With the row's running maximum
  // *row_max (-inf before the first block) and running sum *row_sum (0
  // before), it overwrites scores[0, valid) with exp(scale (scores - new
  // maximum)), zeroes scores[valid, n), updates both and
  // returns the factor the row's earlier accumulations must be multiplied by
  // (1 when the maximum did not change; 0 when nothing was accumulated).
  // With probs_bf16 not NULL the probabilities go there as bf16 instead
  // (scores is left as it was). The lines of `next`'s rows are prefetched
  // for the keys [0, valid) it reads in pairs of whole batches (most of
  // them; the rows are not read).
  float (*softmax_block)(float* scores, int64_t valid, int64_t n, float block_max, float scale,
                         float* row_max, float* row_sum, uint16_t* probs_bf16,
                         const PrefetchRows& next);
  // out[j] = x[j] * factor; out may equal x.
  void (*scale_f32)(const float* x, float factor, float* out, int64_t n);
  // out[j] = bf16(x[j] * factor), rounded to nearest even (NaN kept a NaN),
  // as scale_f32 then posenc_f32_to_bf16 give it.
  void (*scale_to_bf16)(const float* x, float factor, uint16_t* out, int64_t n);
  // dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols (32-bit
  // and 16-bit elements; transpose_impl.hpp).
  void (*transpose_32)(const uint32_t* src, int64_t rows, int64_t cols, int64_t ld_src,
                       uint32_t* dst, int64_t ld_dst);
  void (*transpose_16)(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld_src,
                       uint16_t* dst, int64_t ld_dst);
  // The products of a few query rows (decoding) or of a small problem's
  // with keys and values read as stored, fp32 or bf16, accumulated in fp32
  // (decode_products_impl.hpp; the AVX512-BF16 table's decode_values_bf16
  // rounds the probabilities to bf16, and its decode_scores_bf16 takes
  // their pair products up to 4 rows, decode_pairs_impl.hpp):
  // scores[r * ld_scores + j] = alpha sum_c q[r * ldq + c] k[j * ldk + c] and
  // acc[r * ld_acc + c] = (accumulate ? acc[..] : 0)
  //                       + sum_j probs[r * ld_probs + j] v[j * ldv + c]
  // for r < rows, j < keys, c < dim.
  void (*decode_scores_f32)(const float* q, int64_t ldq, int64_t rows, const float* k,
                            int64_t ldk, int64_t keys, int64_t dim, float alpha, float* scores,
                            int64_t ld_scores);
  void (*decode_scores_bf16)(const uint16_t* q, int64_t ldq, int64_t rows, const uint16_t* k,
                             int64_t ldk, int64_t keys, int64_t dim, float alpha, float* scores,
                             int64_t ld_scores);
  void (*decode_values_f32)(const float* probs, int64_t ld_probs, int64_t rows, const float* v,
                            int64_t ldv, int64_t keys, int64_t dim, bool accumulate, float* acc,
                            int64_t ld_acc);
  void (*decode_values_bf16)(const float* probs, int64_t ld_probs, int64_t rows,
                             const uint16_t* v, int64_t ldv, int64_t keys, int64_t dim,
                             bool accumulate, float* acc, int64_t ld_acc);
};

}  // namespace posenc
