// The two GEMMs of each (query block, key block) pair of the fused
// attention, scores = scale q k^T and acc (+)= p v, and their keys and values
// packed into oneDNN's blocked layout once per thread, key block and (batch,
// kv head): a thread runs the query blocks of a kv head's query heads one
// after the other, and without packing oneDNN would relayout the same keys
// and values for each.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/attention/problem.hpp"
#include "runtime/matmul.hpp"

namespace posenc::ops {

// What a task's GEMMs share: their rows (a query block of each stacked
// head), q's row stride in them (AttentionBlocking::ldq), the keys of a
// whole key block, acc's row stride, and the row strides of keys and values
// in them: as stored, or head_dim and value_head_dim where the task widens
// them into its scratch (widen.hpp).
struct TaskGemms {
  int64_t rows;
  int64_t ldq;
  int64_t key_block;
  int64_t acc_ld;
  int64_t ldk, ldv;
};

// The GEMMs multiply the problem's gemm_dtype.
// scores[rows, kb.count] (row stride gemm_output_stride(kb.count, gemm
// dtype)) = scale * q[rows] k[kb]^T, q's rows task.ldq apart: in place
// (problem.q.token), or a task's dense copy of its rows (head_dim;
// AttentionBlocking::copies_queries), the keys task.ldk apart.
MatmulShape scores_gemm(const AttentionProblem& problem, const TaskGemms& task, int64_t rows,
                        const KeyBlock& kb);

// acc[rows, value_head_dim] (row stride task.acc_ld) = (or += when
// accumulate: a later key block of the task's keys) probs[rows, kb.count]
// v[kb], the values task.ldv apart.
MatmulShape output_gemm(const AttentionProblem& problem, const TaskGemms& task, int64_t rows,
                        const KeyBlock& kb, bool accumulate);

// Key block `index` of a row of `keys` keys (kv_len, or the keys a
// sequence's queries compute: its packed copy holds no more; index *
// task.key_block < keys), and the GEMMs (b_packed) a task runs against its
// keys and values when they are packed.
struct PackedBlock {
  KeyBlock kb;
  MatmulShape keys, values;
};
PackedBlock packed_block(const AttentionProblem& problem, const TaskGemms& task, int64_t index,
                         int64_t keys);

// Where each key block's packed keys and values go in a thread's scratch;
// zero bytes for an operand oneDNN reads as stored.
struct PackedKeyValues {
  size_t key_block_bytes, value_block_bytes;  // per key block, the longest
  int64_t key_blocks;

  size_t bytes() const { return size_t(key_blocks) * (key_block_bytes + value_block_bytes); }
};

// A thread's packed copy of a kv head's keys and values, for the tasks'
// GEMMs; nothing ({0, 0, 0}) where it would take more than 8 MiB of
// workspace or oneDNN reads them all as stored.
// (Whether packing pays is the plan's choice: plan.cpp.)
PackedKeyValues packed_key_values(const AttentionProblem& problem, const TaskGemms& task);

}  // namespace posenc::ops
