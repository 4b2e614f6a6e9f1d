// The positional bias of the fused attention, one query block against one
// key block at a time (docs/design.md sections 4 and 5), and Shaw's relative
// values.
//
// 1D relative: the block's queries need a contiguous window of table rows;
// one GEMM gives their logits against the window, then each score row gets
// its own slice of that result (a clamped, shifted gather). 2D relative: the
// logits against Rh and Rw (two small GEMMs), then their broadcast sum (each
// query's logits gathered into key order first where the order or SAM's
// scaled coordinates need it: ops/relative/relative_axis.hpp).
// Absolute: a second GEMM accumulated into the scores. Disentangled
// (DeBERTa's): the queries' logits and the keys' against table rows, each
// score reading both at its pair's row; per block pair against its window
// of rows, or (where a head's query blocks would make the keys' logits
// again and again) each query block's against the whole table and the
// keys' against it once per (batch, head) and thread: DisentangledWay.
#pragma once

#include <cstdint>

#include "kernels/attention/attention_bias_kernels.hpp"
#include "kernels/kernel_table.hpp"
#include "ops/attention/position_bias.hpp"
#include "ops/attention/problem.hpp"
#include "ops/relative/relative_index.hpp"

namespace posenc::ops {

// A block's position logits in scratch, as add_row reads them. 1D: logits
// [rows, window.count] against table rows window.first.., rows ld apart.
// 2D: the row logits [rows, table_h's rows] (rows ld apart) and column
// logits [rows, table_w's rows] (rows ld_cols apart), a query's keys reading
// a window of them; or, where a key's table row is not its coordinate plus
// a shift (query minus key order, a key map of another size), those logits
// gathered into key order, [rows, X'] and [rows, Y'].
// Disentangled: the queries' logits [rows, window.count] (rows ld apart),
// the keys' [keys, window.count] in col_logits (rows ld_cols apart, from
// key first_key), and columns: the window's column of each distance,
// columns[t] for query minus key distance (last query) - first_key - t.
struct BlockLogits {
  const float* logits;
  int64_t ld;
  const float* col_logits;
  int64_t ld_cols;
  RowWindow window;
  RelativeIndex index;  // RELATIVE_1D: the block's table index
  const int32_t* columns = nullptr;
  int64_t first_key = 0;
};

// How DISENTANGLED's logits are made for blocks of up to these sizes: per
// block pair, or against the whole table (whole_table).
struct DisentangledWay {
  bool whole_table;
  int64_t query_block, key_block;
};
DisentangledWay disentangled_way(const AttentionProblem& problem, int64_t query_block,
                                 int64_t key_block);

class AttentionBias {
 public:
  // position_bias: what PositionBias::prepare wrote for this call (kinds
  // without q). shapes_only: prepare() runs its GEMMs dry (GemmSlots::Use)
  // and writes nothing. The blocks: those of scratch_floats.
  AttentionBias(const AttentionProblem& problem, const posenc_attention_tensors& tensors,
                const KernelTable& kernels, const float* position_bias, bool shapes_only,
                int64_t query_block, int64_t key_block);

  // Makes a thread's scratch hold no keys' logits (DISENTANGLED's whole
  // table way keeps them across its tasks), before its first task of a call.
  void forget(float* scratch) const;

  // Floats of scratch prepare() needs for blocks of up to these sizes, and
  // of the table rows its GEMMs read at once, widened (where the problem
  // widens bf16; else 0).
  static int64_t scratch_floats(const AttentionProblem& problem, int64_t query_block,
                                int64_t key_block);
  static int64_t wide_table_rows_floats(const AttentionProblem& problem, int64_t query_block,
                                        int64_t key_block);

  // The block's position logits (its GEMMs), into scratch; absolute logits
  // go straight into scores (row stride ld), which must hold q k^T already.
  // A 2D bias's are made at the task's first key block (first_key) only: its
  // later key blocks must pass the same scratch (one per stacked head).
  // The GEMMs read the table in place, or widened into wide_table_rows
  // (null in a dry run: nothing widened).
  BlockLogits prepare(const QueryBlock& qb, const KeyBlock& kb, int64_t first_key, float* scores,
                      int64_t ld, float* scratch, float* wide_table_rows) const;

  // row[j] += bias(query qb.first + r, key kb.first + j), then the mask's
  // entry (in the scores' units), for j < valid, the row's q.k capped first
  // under a softcap, from the logits prepare()
  // gave for the same query block and a key block holding kb (its keys from
  // a sliding window's first); returns the largest of row[0, valid). One row
  // at a time, so that the softmax finds it in cache.
  float add_row(const QueryBlock& qb, const KeyBlock& kb, int64_t r, int64_t valid, float* row,
                const BlockLogits& logits) const;

  // The mask's entries add_row reads for row r (null without a mask), of
  // dtype_bytes(mask dtype) each.
  const void* mask_row(const QueryBlock& qb, const KeyBlock& kb, int64_t r) const;

 private:
  // prepare() for RELATIVE_2D: the logits GEMMs at the task's first key
  // block.
  BlockLogits prepare_2d(const QueryBlock& qb, bool first_block, float* scratch,
                         float* wide_table_rows) const;
  // prepare() for DISENTANGLED; first_block: the task's first key block.
  BlockLogits prepare_disentangled(const QueryBlock& qb, const KeyBlock& kb, bool first_block,
                                   float* scratch, float* wide_table_rows) const;
  // The keys' logits (k of the query head's kv head against key_table's
  // rows [first_row, first_row + rows)) of keys [first_key, first_key +
  // keys), into `out` (rows ld apart); widened keys in wide_keys where the
  // problem widens bf16.
  void keys_against_table(const QueryBlock& qb, int64_t first_key, int64_t keys,
                          int64_t first_row, int64_t rows, float* out, int64_t ld,
                          float* wide_keys, float* wide_table_rows) const;
  // The first of keys [first_key, ..) of the block's kv head, as stored.
  const char* key_rows(const QueryBlock& qb, int64_t first_key) const;
  // The keys' logits the block's queries read (columns as BlockLogits
  // holds them, of the window), each key against those rows of key_table
  // by the decode kernel, into `out` (rows ld apart); nothing else of it.
  void keys_at_their_rows(const QueryBlock& qb, const KeyBlock& kb, const int32_t* columns,
                          const RowWindow& window, float* out, int64_t ld) const;
  // The gate of query i's position bias (bias_gate; else 1).
  float gate_of(const QueryBlock& qb, int64_t i) const;
  // The mask's part of add_row (read in place), with a run of bias (null:
  // none) added in the same pass; returns the row's maximum.
  float add_mask_row(const QueryBlock& qb, const KeyBlock& kb, int64_t r, int64_t valid,
                     const float* bias, float* row) const;

  const AttentionProblem& p_;
  const posenc_attention_tensors& t_;
  const AttentionBiasKernels& kernels_;
  const AttentionKernels& products_;  // the decode kernels (the relative query bias's)
  const ElementwiseKernels& elementwise_;
  PositionBias position_;
  bool shapes_only_;
  DisentangledWay disentangled_;
};

// Shaw's relative values: out_i += sum_j a_ij RV[row(i,j)]. Per query block,
// the probabilities are summed per table row into weights (scatter), over
// the key blocks; one GEMM then applies the weights to the window of RV.
class RelativeValues {
 public:
  RelativeValues(const AttentionProblem& problem, const posenc_attention_tensors& tensors,
                 const KernelTable& kernels);

  // Longest window of a query block of up to query_block rows.
  static int64_t max_window(const AttentionProblem& problem, int64_t query_block);
  // Floats of the longest window of RV widened (where the problem widens
  // bf16; else 0).
  static int64_t wide_table_rows_floats(const AttentionProblem& problem, int64_t query_block);

  // The table rows of a query block over keys [first_key, first_key + keys).
  RowWindow window(const QueryBlock& qb, int64_t first_key, int64_t keys) const;

  // weights[w] += sum of p[j] over the keys j of kb whose row is
  // window.first + w, for query row r of the block.
  void scatter(const QueryBlock& qb, int64_t r, const KeyBlock& kb, const RowWindow& window,
               const float* p, float* weights) const;

  // out[r, :] += weights[r, :] . RV[window] for the block's rows (out of row
  // stride ldo; RV and out of value_head_dim columns); weights (row stride
  // ld) in the problem's gemm_dtype; RV read in place, or widened into
  // wide_table_rows (null in a dry run: nothing widened).
  void apply(const QueryBlock& qb, const RowWindow& window, const void* weights, int64_t ld,
             float* out, int64_t ldo, float* wide_table_rows) const;

 private:
  const AttentionProblem& p_;
  const posenc_attention_tensors& t_;
  const AttentionBiasKernels& kernels_;
  const ElementwiseKernels& elementwise_;
};

}  // namespace posenc::ops
