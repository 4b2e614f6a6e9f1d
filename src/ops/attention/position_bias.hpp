// The bias kinds of posenc/bias.h inside the fused attention (TABLE_2D,
// TABLE_1D, T5, ALIBI): biases that need no q, added to one query row of a
// key block in the scores' units. The index rules are ops/bias's
// (table_2d_index.hpp, t5_bucket.hpp, alibi_slopes.hpp, bias_rows.hpp);
// this file lays the weights out so that a row's bias is contiguous runs.
//
// prepare() runs once per call before the parallel region and writes, in
// the workspace, already multiplied by the scores' unit (mask_alpha):
// - TABLE_2D: per head, the entries add_window_row reads (the relative
//   rows reversed, then BEiT's 3 class-token rows). With several batch items
//   (windows) and heads x N x N at most 2^20 floats (N = q_len: Swin's and
//   BEiT's windows), the entries are followed by the bias expanded to
//   [heads, N, N] (one contiguous run per row), shared by every batch item.
// - TABLE_1D and T5: per head, the line of values of the distances
//   [-L, L], L = min(K, q_len + kv_len) with K the table's max_distance
//   (T5: the bucket looked up once per distance). Within L the line covers
//   every distance of offsets in [-(q_len + 1), kv_len + 1] (prefill and
//   decode); when L = K the line's ends serve every farther distance (the
//   value is constant past K); else a farther distance (a rarer offset)
//   reads its entry (T5: computes its bucket) from the stored table.
// - ALIBI: the slopes (given, or posenc_alibi_slopes').
// Nothing grows with the batch, nor with q_len x kv_len past that bound.
#pragma once

#include <cstdint>

#include "kernels/kernel_table.hpp"
#include "ops/attention/problem.hpp"
#include "ops/bias/bias_rows.hpp"
#include "ops/bias/t5_bucket.hpp"
#include "ops/bias/table_2d_index.hpp"

namespace posenc::ops {

// Whether the problem's bias is one of these kinds.
bool is_position_bias(posenc_attention_bias bias);
// Whether the kind takes bias_gate (a gate per query row): those whose row
// is a line of values (TABLE_1D, T5) or ALiBi's.
bool takes_bias_gate(posenc_attention_bias bias);

class PositionBias {
 public:
  // Floats of the workspace prepare() writes (0 for the other kinds).
  static int64_t prepared_floats(const AttentionProblem& problem);
  // Fills `prepared` from the table (tensors->table, of problem.dtype; NULL
  // for ALiBi's standard slopes). Serial: it is small.
  static void prepare(const AttentionProblem& problem, const void* table,
                      const KernelTable& kernels, float* prepared);

  PositionBias(const AttentionProblem& problem, const void* table, const KernelTable& kernels,
               const float* prepared);

  // row[c] += gate * bias(head h, query i at position query_pos, key
  // first_key + c) for c < count, in the scores' units (gate: bias_gate's,
  // or 1; TABLE_2D takes 1 only); returns the largest of
  // row[0, count) (-inf for count 0; a NaN may or may not win). ALiBi's
  // kernel, the lines' gather and TABLE_2D's runs (add_runs, when
  // window_row gives none) add and find it in one pass; the lines' far
  // distances are added one by one, and max_of finds it.
  float add_row(int64_t h, int64_t i, int64_t query_pos, int64_t first_key, int64_t count,
                float gate, float* row) const;

  // Floats of the stage window_row may write: a whole row of a window that
  // is one key block (plan.cpp's single blocks reach 2048 keys).
  static constexpr int64_t kStageFloats = 2048;

  // TABLE_2D only: the bias of head h, query i, keys first_key .. first_key +
  // count as one contiguous run (the values add_row adds), for the mask
  // kernel to add in its pass: the expanded bias's row, or the window's row
  // written into stage (kStageFloats floats) when the block is the whole row
  // (the runs copied by the vector kernel: adding them straight to the
  // scores with add_runs took longer on a 2-core Zen 5, B1 H12 windows
  // 14x14 and the class token 0.45 against 0.35 ms, 24x24 2.9 against 2.6,
  // 40x40 20.4 against 19.5; as long at 32x32). Else null.
  const float* window_row(int64_t h, int64_t i, int64_t first_key, int64_t count,
                          float* stage) const;

 private:
  // T5 and TABLE_1D: the line within [-L, L], the stored table past it.
  float add_row_line(int64_t h, int64_t d0, int64_t count, float gate, float* row) const;
  // The value of distance d outside the line (L < K only).
  float far_value(int64_t h, int64_t d) const;

  const AttentionProblem& p_;
  const KernelTable& kernels_;
  const void* table_;
  const float* prepared_;
  Window2d window_;
  int64_t stride_;  // floats per head in prepared_
  T5Buckets buckets_;
  DistanceLine line_;
  bool line_has_ends_;  // L = K: the line's ends serve every farther distance
  const float* expanded_ = nullptr;  // TABLE_2D's [heads, N, N], when prepared
};

}  // namespace posenc::ops
