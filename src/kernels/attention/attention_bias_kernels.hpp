// Kernels that add positional logits to a block of attention scores, and
// the reverse scatter of relative values (docs/design.md section 4): the logits
// of a query against a contiguous window of table rows are computed by one
// GEMM per query block; these kernels move them to the keys' columns. The
// biases without q use them too: a 1D table's or T5's line of values per
// distance is such a window (gather_add), a 2D window's row a run the mask's
// kernel adds.
#pragma once

#include <cstdint>

namespace posenc {

struct AttentionBiasKernels {
  // scores[j] += gate * window[clamp(j + shift, lo, hi)] for j < n (the
  // product rounded: a gate of 1 adds the window's values); returns the
  // largest new score (-inf for n = 0; a NaN may or may not win). The
  // indices the clamp can produce must lie inside the window.
  float (*gather_add)(const float* window, int64_t shift, int64_t lo, int64_t hi, float gate,
                      float* scores, int64_t n);
  // weights[clamp(j + shift, lo, hi)] += p[j] for j < n (the adjoint of
  // gather_add): sums a row of probabilities per table row.
  void (*scatter_add)(const float* p, int64_t shift, int64_t lo, int64_t hi, float* weights,
                      int64_t n);
  // scores[j] += row_logits[key / width] + col_logits[key % width] with
  // key = first_key + j, for j < n: the decomposed 2D relative bias of one
  // query, row_logits and col_logits already shifted to that query; returns
  // the largest new score, as gather_add.
  float (*add_2d)(const float* row_logits, const float* col_logits, int64_t width,
                  int64_t first_key, float* scores, int64_t n);
  // scores[j] += query_logits[columns[j]] + key_logits[j * ld + columns[j]]
  // for j < n (added in that order): a query's row of DeBERTa's
  // disentangled bias, its logits against a window of table rows and each
  // key's (rows ld apart), both read at the key's row; returns the largest
  // new score, as gather_add. lanes * ld + columns[j] fits int32 (lanes:
  // the ISA's floats per register).
  float (*add_pair_columns)(const float* query_logits, const float* key_logits, int64_t ld,
                            const int32_t* columns, float* scores, int64_t n);
  // The largest of scores[0, n), as gather_add, for rows without a bias of
  // their own.
  float (*max_of)(const float* scores, int64_t n);
  // scores[j] = fma(alpha, mask[j], scores[j] + bias[j]) for j < n, the
  // mask fp32 or bf16 (widened exactly), bias a row of position bias or
  // NULL (then scores[j] + alpha * mask[j]), fma being
  // fused_multiply_add (one rounding on AVX-512, AVX2 and NEON, two on
  // SSE2); returns the largest new score, as gather_add.
  float (*add_mask_f32)(const float* mask, float alpha, const float* bias, float* scores,
                        int64_t n);
  float (*add_mask_bf16)(const uint16_t* mask, float alpha, const float* bias, float* scores,
                         int64_t n);
  // scores[j] = outer tanh(inner scores[j]) for j < n: the logit soft cap
  // (Gemma 2's); returns the largest new score, as gather_add.
  float (*softcap)(float* scores, int64_t n, float inner, float outer);
};

}  // namespace posenc
