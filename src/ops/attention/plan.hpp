// How the fused attention splits its work, and where each thread's scratch
// lives in the workspace.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ops/attention/problem.hpp"
#include "ops/attention/gemms.hpp"
#include "ops/attention/split_keys.hpp"
#include "runtime/ceil_div.hpp"

namespace posenc::ops {

// A query block computes the keys visible to one of its queries, rounded up
// to a multiple of kKeyQuantum (within kv_len). Computed exactly, each new
// count of keys would be a new GEMM shape: with per-sequence lengths or
// offsets, or a query offset, made on every call whose values are new (most
// calls, in serving), and a causal block from an offset not a multiple of
// oneDNN's packed rows (16 fp32, 32 bf16) could not read the packed values
// (runtime/matmul.cpp's packed_b_serves). The keys past the visible ones are
// masked by the softmax's count of valid keys, as causal ones are: at most
// kv_len / kKeyQuantum widths per row count, each made once, for a few
// percent more work. The rows of v past a sequence's length never reach the
// outputs (they may hold anything, NaN included, and a probability 0 times
// NaN is NaN): a packed copy has them set to zero (pack_key_block), without
// one the last quantum of such a block is multiplied from a copy padded with
// zeros (the slot's value_tail), and the decode kernels take the exact
// count. attention() still runs each call's GEMMs dry before its region
// (lookups, once made), so that a width not seen before is made there, not
// in the region.
constexpr int64_t kKeyQuantum = 32;

// A query block computes its rows from its first up to its sequence's last
// query, their count rounded up to a multiple of kRowQuantum (within the
// block): a padded batch's short sequence does not compute the whole block
// its last query falls in, and the GEMMs take few row counts (multiples of
// kRowQuantum, and the blocks' own). Its rows of out past q_length are
// zeros, those computed past it included; a block wholly past it computes
// nothing.
constexpr int64_t kRowQuantum = 32;

// keys rounded up to a multiple of kKeyQuantum, at most kv_len.
inline int64_t keys_rounded(int64_t keys, int64_t kv_len) {
  return std::min(kv_len, round_up(keys, kKeyQuantum));
}

// The keys the queries [first, first + rows) of sequence `seq` compute.
inline int64_t computed_keys(const AttentionProblem& p, const Sequence& seq, int64_t first,
                             int64_t rows) {
  const int64_t last = std::min(first + rows, seq.q_length) - 1;
  return last < first ? 0 : keys_rounded(p.visible_keys(seq, last), p.kv_len);
}

// The rows a block of `rows` queries from `first` of sequence `seq` computes.
inline int64_t computed_rows(const Sequence& seq, int64_t first, int64_t rows) {
  return std::min(rows, round_up(std::max<int64_t>(seq.q_length - first, 0), kRowQuantum));
}

struct AttentionBlocking {
  int64_t query_block;   // rows per query block (the last may be shorter)
  int64_t key_block;     // keys per online-softmax step (the last may be shorter)
  int64_t query_blocks;  // per (batch, head)
  // Query heads of one kv head a task runs together (grouped-query decode):
  // their query blocks stacked as the rows of one pair of GEMMs, so that
  // each key and value is read once for all of them. 1: one head per task.
  int64_t stacked_heads;
  // The task's two products run the decode kernels (rows against keys and
  // values as stored), not GEMMs: for at most kMaxDecodeRows rows, or a
  // small problem's (plan.cpp's small_problem_products).
  bool decode_products;
  // The task copies its rows of q into its scratch, dense (row stride
  // head_dim), for its GEMMs: with stacked heads (one GEMM's rows), when
  // q's rows are further apart (BTHD, a packed qkv tensor), which oneDNN
  // 2.6's brgemm kernels (AMX among them) do not take: such a GEMM runs on
  // its older gemm, without AMX; and where the task widens bf16 (the copy
  // is in products_dtype).
  bool copies_queries;
  // Ranges of keys_per_split keys (whole key blocks) each query block's keys
  // are split into (split_keys.hpp), from the key block holding its first
  // visible key; 1 (keys_per_split = kv_len): no split.
  int64_t key_splits;
  int64_t keys_per_split;
  // batch * heads / stacked_heads * query_blocks * key_splits, in this order
  int64_t tasks;
  int slots;             // threads that get scratch: min(threads, tasks)

  bool splits_keys() const { return key_splits > 1; }
  // One per query block (of stacked_heads heads).
  int64_t query_tasks() const { return tasks / key_splits; }
  // Rows of a task's GEMMs and of its scratch.
  int64_t rows() const { return query_block * stacked_heads; }
  // The row stride of q in the task's GEMMs: in place, or the copy's.
  int64_t ldq(const AttentionProblem& p) const {
    return copies_queries ? p.head_dim : p.q.token;
  }
  // The type the task's two products read q (its copy), the keys and the
  // values in: the decode kernels read them as stored, GEMMs in the
  // problem's gemm_dtype.
  posenc_dtype products_dtype(const AttentionProblem& p) const {
    return decode_products ? p.dtype : p.gemm_dtype;
  }
  // The task's products are GEMMs that widen bf16: q (its copy) and each
  // key block's keys and values into its scratch (widen.hpp).
  bool widens_products(const AttentionProblem& p) const { return products_dtype(p) != p.dtype; }
  // Decode kernels that read bf16 q as stored, beside a bias whose GEMMs
  // read q widened: the task widens its rows of q for them.
  // (Table rows are widened wherever the problem's GEMMs widen bf16.)
  bool widens_bias_q(const AttentionProblem& p) const {
    return decode_products && p.gemms_widen_bf16() && p.bias_reads_q();
  }
  // The tasks that read each (batch, kv head)'s keys and values.
  int64_t kv_readers(const AttentionProblem& p) const {
    return p.heads / p.kv_heads / stacked_heads * query_blocks;
  }
  TaskGemms task_gemms(const AttentionProblem& p) const {
    const bool wide = widens_products(p);
    return {rows(),
            ldq(p),
            key_block,
            gemm_output_stride(p.value_head_dim, p.gemm_dtype),
            wide ? p.head_dim : p.k.token,
            wide ? p.value_head_dim : p.v.token};
  }
};

// Byte offsets of one thread's scratch inside its slot, each 64-byte aligned.
struct SlotLayout {
  // Rows: blocking.rows(); the bias's scratch serves one head's block at a
  // time, except a 2D bias's: its logits, made at a block's first key block,
  // serve the later ones, so each stacked head keeps its own.
  int64_t scores_ld; // the longest row stride of scores and probs_bf16
  size_t dense_q;    // [rows, head_dim] in products_dtype (copies_queries only)
  size_t value_tail;   // [kKeyQuantum, value_head_dim] in the problem's dtype (GEMMs
                       // on values as stored)
  size_t wide_bias_q;  // float [rows, head_dim] (widens_bias_q only)
  size_t wide_keys;    // float [key_block, head_dim] (widens_products only)
  size_t wide_values;  // float [key_block, value_head_dim] (widens_products only)
  size_t scores;     // float [rows, scores_ld]
  size_t probs_bf16;  // uint16 [rows, scores_ld] (GEMMs in bf16 only)
  size_t bias;       // AttentionBias scratch
  int64_t bias_head_stride;  // floats from a stacked head's scratch to the next's (or 0)
  size_t acc;        // float [rows, TaskGemms::acc_ld]: unnormalized output
  size_t row_max;    // float [rows]
  size_t row_sum;    // float [rows]
  size_t weights;    // float [rows, value_window] (relative values only; a task's rows dense)
  size_t weights_bf16;
  int64_t value_window;
  size_t wide_table_rows;  // float: the table rows of one bias or relative-values GEMM,
                           // widened (where the problem's GEMMs widen bf16)
  PackedKeyValues packed;
  size_t packed_keys;   // packed.key_blocks blocks of packed.key_block_bytes
  size_t packed_values; // packed.key_blocks blocks of packed.value_block_bytes
  size_t packed_block_kv; // packed.key_blocks int64: the (batch * kv_heads + kv head)
                          // whose block is packed there, or -1
  size_t bytes;      // the whole slot
};

// How a problem runs on a thread count: its blocks, each thread's scratch
// and the whole workspace. Made once per call (it looks up oneDNN
// primitives to size the packed keys and values).
struct AttentionPlan {
  AttentionBlocking blocking;
  SlotLayout layout;
  // With split keys, after the slots: a partial result per task, then a
  // count of finished tasks per query block (MergeCounts).
  PartialLayout partial;
  size_t partials;         // offset of the partial results (0 bytes without split)
  size_t merge_counts;     // offset of the counts
  size_t position_bias;    // offset of PositionBias's prepared floats (shared)
  size_t workspace_bytes;  // all of these, and the slack to align the caller's pointer
};

// The plan of `problem` on `threads` threads and the ISA path `isa` (whose
// kernels run some products that oneDNN's GEMMs run on others).
AttentionPlan plan_attention(const AttentionProblem& problem, int threads, posenc_isa isa);

}  // namespace posenc::ops
