#include "ops/attention/attention.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ops/attention/bias.hpp"
#include "ops/attention/gemms.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/position_bias.hpp"
#include "ops/attention/split_keys.hpp"
#include "ops/attention/widen.hpp"
#include "runtime/dtype.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"
#include "runtime/phase_times.hpp"
#include "runtime/prefetch.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// The fewest keys of a block whose softmax prefetches the next row for its
// bias pass. On one core of a Sapphire Rapids, blocks of 1024 and 2048 keys
// took that pass 0.65-0.7x; at 512 it ran within noise and the softmax
// 1.25x (the lines were near already).
constexpr int64_t kMinPrefetchKeyBlock = 1024;

// One thread's view of its scratch.
struct Scratch {
  uint8_t* dense_q;
  uint8_t* value_tail;
  float* wide_bias_q;
  float* wide_keys;
  float* wide_values;
  float* scores;
  uint16_t* probs_bf16;
  float* bias;
  float* acc;
  float* row_max;
  float* row_sum;
  float* weights;
  uint16_t* weights_bf16;
  float* wide_table_rows;
  uint8_t* packed_keys;
  uint8_t* packed_values;
  int64_t* packed_block_kv;

  Scratch(uint8_t* slot, const SlotLayout& s)
      : dense_q(slot + s.dense_q),
        value_tail(slot + s.value_tail),
        wide_bias_q(reinterpret_cast<float*>(slot + s.wide_bias_q)),
        wide_keys(reinterpret_cast<float*>(slot + s.wide_keys)),
        wide_values(reinterpret_cast<float*>(slot + s.wide_values)),
        scores(reinterpret_cast<float*>(slot + s.scores)),
        probs_bf16(reinterpret_cast<uint16_t*>(slot + s.probs_bf16)),
        bias(reinterpret_cast<float*>(slot + s.bias)),
        acc(reinterpret_cast<float*>(slot + s.acc)),
        row_max(reinterpret_cast<float*>(slot + s.row_max)),
        row_sum(reinterpret_cast<float*>(slot + s.row_sum)),
        weights(reinterpret_cast<float*>(slot + s.weights)),
        weights_bf16(reinterpret_cast<uint16_t*>(slot + s.weights_bf16)),
        wide_table_rows(reinterpret_cast<float*>(slot + s.wide_table_rows)),
        packed_keys(slot + s.packed_keys),
        packed_values(slot + s.packed_values),
        packed_block_kv(reinterpret_cast<int64_t*>(slot + s.packed_block_kv)) {}

  // The same scratch with the task's result kept in a partial record.
  Scratch with_result_in(const Partial& partial) const {
    Scratch s = *this;
    s.acc = partial.acc;
    s.row_max = partial.row_max;
    s.row_sum = partial.row_sum;
    return s;
  }
};

// A key block's keys or values as packed in a thread's scratch: where
// (null: not packed, read as stored) and for which GEMM.
struct PackedOperand {
  uint8_t* data;
  MatmulShape packed_for;
};

// The factor of a row's acc, both it and row_sum relative to the row's
// largest score, with a sink (a key of value zero) `gap` above that score
// in softmax-input units: 1 / (row_sum + exp(gap)), or for a sink above the
// score, every weight relative to the sink's, exp(-gap) / (row_sum exp(-gap)
// + 1), which stays finite (rows of zeros for a sink of +inf).
float sink_normalizer(float row_sum, float gap) {
  if (!(gap > 0.0f)) return 1.0f / (row_sum + std::exp(gap));
  const float keys = std::exp(-gap);
  return keys / (row_sum * keys + 1.0f);
}

// Runs the tasks of the attention: one query block of one (batch, head)
// against all its visible keys, writing its rows of out, or with split keys
// (split_keys.hpp) against one range of them, leaving its partial softmax in
// the scratch's acc, row_max and row_sum; then merges the partials. With
// stacked heads a task is the same query block of blocking.stacked_heads
// heads of one kv head: its GEMMs take their rows stacked (head after head,
// q copied into the scratch, as q rows further apart than head_dim are
// too), the rest runs per head's block. With
// blocking.decode_products (a few rows, or a small problem) the two products
// run the decode kernels instead of GEMMs. Where the problem's GEMMs run in fp32 on bf16
// (gemm_dtype), the GEMMs read q, keys, values and table rows widened into
// the scratch (widen.hpp).
// With shapes_only it runs each GEMM of the task dry (GemmSlots::Use) and
// nothing else, writing nothing but the scratch's packed_block_kv.
// Tasks go (batch, head or stack of heads, query block, key range); the
// threads visit a kv head's tasks one after the other (attention() below),
// and a thread packs each key block of that kv head once, when the first of
// its tasks that reads the block runs.
class QueryBlockRunner {
 public:
  QueryBlockRunner(const ExecContext& ctx, const AttentionProblem& p,
                   const posenc_attention_tensors& t, const AttentionBlocking& blocking,
                   const SlotLayout& layout, const float* position_bias, bool shapes_only = false)
      : ctx_(ctx),
        p_(p),
        t_(t),
        blocking_(blocking),
        layout_(layout),
        task_(blocking.task_gemms(p)),
        shapes_only_(shapes_only),
        timed_phases_(!shapes_only && phase_times_enabled()),
        bias_(p, t, *ctx.kernels, position_bias, shapes_only, blocking.query_block,
              blocking.key_block),
        values_(p, t, *ctx.kernels) {}

  void run(int64_t task, const Scratch& s) const;
  // The slot's bias keeps no logits from an earlier call (AttentionBias::forget).
  void forget_bias_logits(const Scratch& s) const { bias_.forget(s.bias); }
  // Merges the partials of query block `query_task` (records as laid out by
  // `partial`) and writes its rows of out.
  void merge(int64_t query_task, uint8_t* records, const PartialLayout& partial,
             const Scratch& s) const;

 private:
  // Query block `query_task` (of batch * heads / stacked_heads *
  // query_blocks) of its first head, with the rows it computes
  // (computed_rows), and its batch item's sequence.
  QueryBlock query_block(int64_t query_task, Sequence& seq) const {
    const int64_t stacks = p_.heads / blocking_.stacked_heads;
    const int64_t b = query_task / (stacks * blocking_.query_blocks);
    const int64_t h = query_task / blocking_.query_blocks % stacks * blocking_.stacked_heads;
    const int64_t first = query_task % blocking_.query_blocks * blocking_.query_block;
    seq = p_.sequence(b);
    const int64_t rows = computed_rows(seq, first, block_rows(first));
    return QueryBlock{h, seq.query_offset, row_of(t_.q, p_.q, b, h, first), p_.q.token,
                      first, rows, b};
  }
  // The rows of out of the query block from `first`.
  int64_t block_rows(int64_t first) const {
    return std::min(blocking_.query_block, p_.q_len - first);
  }
  // The same block of stacked head j (0: qb itself), whose rows are the
  // task's rows from j * qb.rows (stacked heads read q's copy).
  QueryBlock stacked_block(const QueryBlock& qb, int64_t j) const {
    QueryBlock block = qb;
    block.head = qb.head + j;
    block.q = static_cast<const char*>(qb.q) +
              size_t(j * qb.rows * qb.ldq) * dtype_bytes(blocking_.products_dtype(p_));
    return block;
  }
  // Copies the task's rows of q (every stacked head's block, one after the
  // other) to `to`, dense, widened or as stored: the scratch's dense_q,
  // which queries_in_scratch reads, or its wide_bias_q.
  void copy_queries(const QueryBlock& qb, void* to, bool widen) const;
  QueryBlock queries_in_scratch(const QueryBlock& qb, const Scratch& s) const {
    QueryBlock dense = qb;
    dense.q = s.dense_q;
    dense.ldq = p_.head_dim;
    return dense;
  }
  // The block of stacked head j (head_block) as its bias's GEMMs read q:
  // the block's, or its rows widened in wide_bias_q (widens_bias_q).
  QueryBlock bias_block(const QueryBlock& head_block, int64_t j, const Scratch& s) const {
    if (!blocking_.widens_bias_q(p_)) return head_block;
    QueryBlock block = head_block;
    block.q = s.wide_bias_q + j * head_block.rows * p_.head_dim;
    block.ldq = p_.head_dim;
    return block;
  }
  const char* row_of(const void* base, const TokenStrides& st, int64_t b, int64_t h,
                     int64_t t) const {
    return static_cast<const char*>(base) +
           size_t(b * st.batch + h * st.head + t * st.token) * p_.element_bytes();
  }
  // Packs key block `index` of kv head kv_index (b * kv_heads + the kv
  // head) as its sequence's GEMMs read it (packed_key_count), its values
  // past the length zeros, unless the scratch holds it already.
  void pack_key_block(int64_t b, const Sequence& seq, int64_t kv_index, int64_t index,
                      const Scratch& s) const;
  // Where the bias's and the relative values' GEMMs widen table rows: the
  // scratch's, none in a dry run (which reads no table).
  float* wide_table_rows(const Scratch& s) const {
    return shapes_only_ ? nullptr : s.wide_table_rows;
  }
  // kb's keys (`keys` as stored) and its values (`values`, of which the
  // first `stored` rows exist) as a GEMM reads them when no packed copy
  // serves it: as stored, or widened into the scratch, the values past
  // `stored` zeros.
  const void* gemm_keys(const char* keys, const KeyBlock& kb, const Scratch& s) const;
  const void* gemm_values(const char* values, const KeyBlock& kb, int64_t stored,
                          const Scratch& s) const;
  // What the softmax of row r of head_block prefetches for the next row's
  // bias pass, in long key blocks: that row's scores (next_scores; null
  // where none follows in the block) and its mask row, where the mask has a
  // row per query and the next row is the same head's. (A mask read from
  // memory then makes the softmax wait on its prefetches instead; the two
  // passes still took less.)
  PrefetchRows next_rows(const QueryBlock& head_block, const KeyBlock& kb, int64_t r,
                         const float* next_scores) const {
    PrefetchRows next;
    if (kb.count < kMinPrefetchKeyBlock) return next;
    next.rows[0] = {next_scores, int64_t(sizeof(float))};
    if (p_.mask.q_len > 1 && r + 1 < head_block.rows) {
      next.rows[1] = {bias_.mask_row(head_block, kb, r + 1), int64_t(dtype_bytes(p_.mask.dtype))};
    }
    return next;
  }
  // kb within the task's keys `range`.
  void key_block(const QueryBlock& qb, int64_t b, const Sequence& seq, const KeyBlock& kb,
                 const KeyRange& range, const RowWindow& vw, const Scratch& s) const;
  // The two products of key_block: scores[rows, ld] = q (ldq apart) times
  // kb's keys, and acc (+)= probs (ld apart; bf16 or fp32 for a GEMM, fp32
  // for a decode kernel) times kb's values. Each is a GEMM, with B packed
  // (pack_key_block) where that pays, or with blocking.decode_products a
  // decode kernel reading the keys and values where they are stored. Of
  // kb's values, the first `stored` rows exist (fewer than kb.count where
  // the keys were rounded past the sequence's length); no other is read
  // (a packed copy holds zeros for them). The packed copies hold the
  // sequence's key_count keys (packed_key_count).
  void scores_product(const void* q, int64_t rows, const KeyBlock& kb, const char* keys,
                      int64_t key_count, int64_t ld, const Scratch& s) const;
  void values_product(const void* probs, int64_t ld, int64_t rows, const KeyBlock& kb,
                      int64_t stored, const char* values, int64_t key_count, bool accumulate,
                      const Scratch& s) const;
  // values_product's GEMMs for stored < kb.count where no packed copy
  // serves them: the stored rows down to a multiple of kKeyQuantum read in
  // place, the rest from the slot's value_tail, a copy of them padded with
  // zeros.
  void values_past_length(const void* probs, int64_t ld, int64_t rows, const KeyBlock& kb,
                          int64_t stored, const char* values, const PackedOperand& packed,
                          bool accumulate, const Scratch& s) const;
  // The keys of sequence seq's kv heads that pack_key_block packs: those its
  // queries compute, in blocks of that many keys (packed_block), not of
  // kv_len's: a padded batch's short sequence, or causal queries that see
  // fewer than kv_len keys, pack only theirs.
  int64_t packed_key_count(const Sequence& seq) const {
    return computed_keys(p_, seq, 0, p_.q_len);
  }
  // Key block `index`'s keys and values as packed in the slot for a
  // sequence of key_count keys (packed_key_count): pack_key_block writes them
  // there, the GEMMs read them.
  PackedOperand packed_keys(int64_t index, int64_t key_count, const Scratch& s) const {
    return packed_operand(s.packed_keys, layout_.packed.key_block_bytes, index, key_count,
                          [](const PackedBlock& block) { return block.keys; });
  }
  PackedOperand packed_values(int64_t index, int64_t key_count, const Scratch& s) const {
    return packed_operand(s.packed_values, layout_.packed.value_block_bytes, index, key_count,
                          [](const PackedBlock& block) { return block.values; });
  }
  // Block `index` of `blocks` (block_bytes each, the longest of kv_len's
  // blocks), packed for the GEMM `operand` picks of the block's; none where
  // nothing is packed or oneDNN reads that block as stored (packed_b_bytes
  // 0). A block of fewer keys whose layout needs more bytes than the slot
  // holds keeps kv_len's block (oneDNN 2.6 blocks some where it packs kv_len
  // plainly: bf16 keys, 32 of a 60-key problem took 4096 bytes, all 60 took
  // 1920).
  template <class Operand>
  PackedOperand packed_operand(uint8_t* blocks, size_t block_bytes, int64_t index,
                               int64_t key_count, Operand operand) const {
    if (block_bytes == 0) return {nullptr, {}};
    MatmulShape packed_for = operand(ops::packed_block(p_, task_, index, key_count));
    size_t bytes = packed_b_bytes(packed_for);
    if (bytes > block_bytes) {
      packed_for = operand(ops::packed_block(p_, task_, index, p_.kv_len));
      bytes = packed_b_bytes(packed_for);
    }
    if (bytes == 0) return {nullptr, packed_for};
    return {blocks + size_t(index) * block_bytes, packed_for};
  }
  int64_t block_index(const KeyBlock& kb) const { return kb.first / blocking_.key_block; }
  // gemm_packed runs `shape` with B packed where the packed block serves it,
  // and returns false (nothing run) where not; gemm then reads B as
  // stored_b() gives it (gemm_keys, gemm_values: made only then).
  static bool gemm_packed(const MatmulShape& shape, const PackedOperand& b, const void* a,
                          void* c);
  template <class StoredB>
  static void gemm(const MatmulShape& shape, const void* a, const StoredB& stored_b,
                   const PackedOperand& packed_b, void* c) {
    if (!gemm_packed(shape, packed_b, a, c)) matmul(shape, a, stored_b(), c);
  }
  // Row i of out of qb's stacked head j.
  char* out_row(const QueryBlock& qb, int64_t j, int64_t i) const {
    return static_cast<char*>(t_.out) +
           size_t(qb.batch * p_.out.batch + (qb.head + j) * p_.out.head + i * p_.out.token) *
               dtype_bytes(p_.out_dtype);
  }
  // Writes the rows of out of the task's block of every stacked head: its
  // computed rows' results, zeros past q_length.
  void store(const QueryBlock& qb, const Sequence& seq, const Scratch& s) const;
  // A scope timing `phase` (runtime/phase_times.hpp) where the call is
  // timed: not in a dry run.
  PhaseScope phase_scope(Phase phase) const { return PhaseScope(phase, timed_phases_); }

  const ExecContext& ctx_;
  const AttentionProblem& p_;
  const posenc_attention_tensors& t_;
  const AttentionBlocking& blocking_;
  const SlotLayout& layout_;
  const TaskGemms task_;
  bool shapes_only_;
  bool timed_phases_;  // the phase switch, read once for the call
  AttentionBias bias_;
  RelativeValues values_;
};

void QueryBlockRunner::run(int64_t task, const Scratch& s) const {
  const int64_t query_task = task / blocking_.key_splits;
  Sequence seq;
  const QueryBlock in_place = query_block(query_task, seq);
  const int64_t b = in_place.batch;
  // The task's share of the keys visible to at least one query of the block
  // (none past q_length); under a sliding window from the key block holding
  // its first query's first key.
  const int64_t window_start =
      p_.first_visible_key(seq, in_place.first) / blocking_.key_block * blocking_.key_block;
  const KeyRange range =
      key_range(task % blocking_.key_splits, blocking_.keys_per_split, window_start,
                computed_keys(p_, seq, in_place.first, in_place.rows));
  if (!shapes_only_ && range.count() > 0) {
    if (blocking_.copies_queries) copy_queries(in_place, s.dense_q, blocking_.widens_products(p_));
    if (blocking_.widens_bias_q(p_)) copy_queries(in_place, s.wide_bias_q, true);
  }
  const QueryBlock qb = blocking_.copies_queries ? queries_in_scratch(in_place, s) : in_place;
  // b * kv_heads + the kv head.
  const int64_t kv_index = query_task / blocking_.kv_readers(p_);
  const int64_t rows = qb.rows * blocking_.stacked_heads;
  if (!shapes_only_) {
    std::fill(s.row_max, s.row_max + rows, -std::numeric_limits<float>::infinity());
    std::fill(s.row_sum, s.row_sum + rows, 0.0f);
  }
  // Every stacked head's block reads the same window (it follows positions).
  // The weights' rows are vw.count apart: dense, as oneDNN's brgemm kernels
  // take A.
  RowWindow vw{0, 0};
  if (p_.relative_values && range.count() > 0) {
    vw = values_.window(qb, range.first, range.count());
    if (!shapes_only_) std::fill(s.weights, s.weights + rows * vw.count, 0.0f);
  }
  for (int64_t j = range.first; j < range.end; j += blocking_.key_block) {
    const KeyBlock kb{j, std::min(blocking_.key_block, range.end - j)};
    if (layout_.packed.bytes() > 0) pack_key_block(b, seq, kv_index, block_index(kb), s);
    key_block(qb, b, seq, kb, range, vw, s);
  }
  if (p_.relative_values && range.count() > 0) {
    const PhaseScope timing = phase_scope(Phase::kRelativeValues);
    const bool bf16 = p_.gemm_dtype == POSENC_BF16;
    if (bf16 && !shapes_only_) {
      ctx_.kernels->elementwise.f32_to_bf16(s.weights, s.weights_bf16, rows * vw.count);
    }
    for (int64_t j = 0; j < blocking_.stacked_heads; ++j) {
      const int64_t row = j * qb.rows;
      const size_t weights_at = size_t(row * vw.count);
      const void* weights = bf16 ? static_cast<const void*>(s.weights_bf16 + weights_at)
                                 : static_cast<const void*>(s.weights + weights_at);
      values_.apply(stacked_block(qb, j), vw, weights, vw.count, s.acc + row * task_.acc_ld,
                    task_.acc_ld, wide_table_rows(s));
    }
  }
  if (!shapes_only_ && !blocking_.splits_keys()) store(qb, seq, s);
}

void QueryBlockRunner::copy_queries(const QueryBlock& qb, void* to, bool widen) const {
  const PhaseScope timing = phase_scope(Phase::kCopyQueries);
  const size_t row_bytes = size_t(p_.head_dim) * (widen ? sizeof(float) : p_.element_bytes());
  auto* row = static_cast<uint8_t*>(to);
  for (int64_t j = 0; j < blocking_.stacked_heads; ++j, row += qb.rows * row_bytes) {
    const char* first = row_of(t_.q, p_.q, qb.batch, qb.head + j, qb.first);
    if (widen) {
      widen_rows(ctx_.kernels->elementwise, first, p_.q.token, qb.rows, p_.head_dim,
                 reinterpret_cast<float*>(row));
      continue;
    }
    for (int64_t r = 0; r < qb.rows; ++r) {
      std::memcpy(row + r * row_bytes, first + size_t(r * p_.q.token) * p_.element_bytes(),
                  row_bytes);
    }
  }
}

void QueryBlockRunner::merge(int64_t query_task, uint8_t* records, const PartialLayout& partial,
                             const Scratch& s) const {
  Sequence seq;
  const QueryBlock qb = query_block(query_task, seq);
  PhaseScope timing = phase_scope(Phase::kMerge);
  merge_partials(records, partial, query_task * blocking_.key_splits, blocking_.key_splits,
                 qb.rows * blocking_.stacked_heads, p_.value_head_dim, task_.acc_ld,
                 p_.softmax_scale, s.acc, s.row_max, s.row_sum);
  timing.end();
  store(qb, seq, s);
}

void QueryBlockRunner::pack_key_block(int64_t b, const Sequence& seq, int64_t kv_index,
                                      int64_t index, const Scratch& s) const {
  int64_t& packed_kv = s.packed_block_kv[index];
  if (packed_kv == kv_index) return;
  const PhaseScope timing = phase_scope(Phase::kPackKeysValues);
  packed_kv = -1;  // until the block is packed
  const int64_t kv_head = kv_index % p_.kv_heads;
  const int64_t key_count = packed_key_count(seq);
  // The values a GEMM reads past the length: up to it rounded (computed_keys).
  const int64_t values_read = keys_rounded(seq.kv_length, p_.kv_len);
  const int64_t first = index * blocking_.key_block;
  // Blocks read as stored (no data) are not copied; the others hold the
  // keys their GEMM shape has (packed_operand may keep kv_len's block).
  if (const PackedOperand to = packed_keys(index, key_count, s); to.data != nullptr) {
    const KeyBlock kb{first, to.packed_for.n};
    pack_b(to.packed_for, gemm_keys(row_of(t_.k, p_.k, b, kv_head, first), kb, s), to.data);
  }
  if (const PackedOperand to = packed_values(index, key_count, s); to.data != nullptr) {
    const KeyBlock kb{first, to.packed_for.k};
    pack_b(to.packed_for, gemm_values(row_of(t_.v, p_.v, b, kv_head, first), kb, kb.count, s),
           to.data);
    const int64_t past = std::max<int64_t>(seq.kv_length - kb.first, 0);
    const int64_t end = std::min(kb.count, values_read - kb.first);
    if (past < end) zero_packed_b_rows(to.packed_for, to.data, past, end);
  }
  packed_kv = kv_index;
}

// The block serves `shape` where its layout does (it can depend on the rows
// of the query block; the fewer keys of a causal block, or of a sequence
// whose own block would not fit the slot, read a leading part of it, or of
// each of its column blocks, where oneDNN's layout allows:
// matmul_on_packed_b).
bool QueryBlockRunner::gemm_packed(const MatmulShape& shape, const PackedOperand& b,
                                   const void* a, void* c) {
  if (b.data == nullptr) return false;
  MatmulShape packed = shape;
  packed.b_packed = true;
  return matmul_on_packed_b(packed, b.packed_for, a, b.data, c);
}

const void* QueryBlockRunner::gemm_keys(const char* keys, const KeyBlock& kb,
                                        const Scratch& s) const {
  if (!blocking_.widens_products(p_)) return keys;
  if (!shapes_only_) {
    widen_rows(ctx_.kernels->elementwise, keys, p_.k.token, kb.count, p_.head_dim, s.wide_keys);
  }
  return s.wide_keys;
}

const void* QueryBlockRunner::gemm_values(const char* values, const KeyBlock& kb, int64_t stored,
                                          const Scratch& s) const {
  if (!blocking_.widens_products(p_)) return values;
  if (!shapes_only_) {
    const int64_t d = p_.value_head_dim;
    widen_rows(ctx_.kernels->elementwise, values, p_.v.token, stored, d, s.wide_values);
    std::fill(s.wide_values + stored * d, s.wide_values + kb.count * d, 0.0f);
  }
  return s.wide_values;
}

void QueryBlockRunner::key_block(const QueryBlock& qb, int64_t b, const Sequence& seq,
                                 const KeyBlock& kb, const KeyRange& range, const RowWindow& vw,
                                 const Scratch& s) const {
  const AttentionKernels& k = ctx_.kernels->attention;
  const int64_t ld = gemm_output_stride(kb.count, p_.gemm_dtype);
  const int64_t kv_head = p_.kv_head(qb.head);
  const int64_t rows = qb.rows * blocking_.stacked_heads;
  const int64_t key_count = packed_key_count(seq);
  {
    const PhaseScope timing = phase_scope(Phase::kScoresProduct);
    scores_product(qb.q, rows, kb, row_of(t_.k, p_.k, b, kv_head, kb.first), key_count, ld, s);
  }

  // bf16 GEMMs take bf16 probabilities, straight from the softmax unless
  // the relative values need them in fp32 first; fp32 GEMMs (bf16 widened)
  // and the decode kernels take fp32 (which the decode kernels round to
  // bf16 themselves where they use AVX512-BF16).
  const bool bf16_probs = p_.gemm_dtype == POSENC_BF16 && !blocking_.decode_products;
  const bool direct_bf16 = bf16_probs && !p_.relative_values;
  // After the task's last key block its rows go to out (store; with split
  // keys the merge writes them): where they are adjacent in out, each row's
  // lines are asked for once its softmax is done, so that the stores find
  // them in the caches rather than each waiting on memory for its line (a
  // task's rows are its own, so the lines come exclusive, but for a line a
  // block's end may share with the next). Rows further apart (BTHD) lay a
  // page or more apart, and asking for them slowed the next rows' bias pass
  // more than it sped the store.
  const int64_t out_row_bytes = p_.value_head_dim * int64_t(dtype_bytes(p_.out_dtype));
  const bool prefetches_out = !blocking_.splits_keys() && kb.first + kb.count == range.end &&
                              p_.out.token == p_.value_head_dim;
  for (int64_t j = 0; j < blocking_.stacked_heads; ++j) {
    const QueryBlock head_block = stacked_block(qb, j);
    PhaseScope bias_timing = phase_scope(Phase::kBiasLogits);
    const BlockLogits logits =
        bias_.prepare(bias_block(head_block, j, s), kb, range.first, s.scores + j * qb.rows * ld,
                      ld, s.bias + j * layout_.bias_head_stride, wide_table_rows(s));
    bias_timing.end();
    for (int64_t r = 0; r < qb.rows && !shapes_only_; ++r) {
      const int64_t row_index = j * qb.rows + r;  // among the task's rows
      float* row = s.scores + row_index * ld;
      const int64_t i = qb.first + r;
      const int64_t visible = i < seq.q_length ? p_.visible_keys(seq, i) : 0;
      const int64_t valid = std::clamp<int64_t>(visible - kb.first, 0, kb.count);
      // Keys before a sliding window are -inf, as a mask's; the bias is
      // added to the others only.
      const int64_t hidden =
          std::clamp<int64_t>(p_.first_visible_key(seq, i) - kb.first, 0, valid);
      PhaseScope row_timing = phase_scope(Phase::kBiasRows);
      std::fill(row, row + hidden, -std::numeric_limits<float>::infinity());
      const float block_max =
          bias_.add_row(head_block, KeyBlock{kb.first + hidden, kb.count - hidden}, r,
                        valid - hidden, row + hidden, logits);
      row_timing.end();
      uint16_t* probs_bf16 = s.probs_bf16 + row_index * ld;
      PhaseScope softmax_timing = phase_scope(Phase::kSoftmax);
      const float correction =
          k.softmax_block(row, valid, kb.count, block_max, p_.softmax_scale, s.row_max + row_index,
                          s.row_sum + row_index, direct_bf16 ? probs_bf16 : nullptr,
                          next_rows(head_block, kb, r, row_index + 1 < rows ? row + ld : nullptr));
      softmax_timing.end();
      if (prefetches_out) prefetch_bytes(out_row(qb, j, i), out_row_bytes);
      float* weights = s.weights + row_index * vw.count;
      if (kb.first > range.first && correction != 1.0f) {
        const PhaseScope timing = phase_scope(Phase::kRescale);
        float* acc = s.acc + row_index * task_.acc_ld;
        k.scale_f32(acc, correction, acc, p_.value_head_dim);
        if (p_.relative_values) k.scale_f32(weights, correction, weights, vw.count);
      }
      if (p_.relative_values) {
        const PhaseScope timing = phase_scope(Phase::kRelativeValues);
        values_.scatter(head_block, r, kb, vw, row, weights);
        if (bf16_probs) {
          ctx_.kernels->elementwise.f32_to_bf16(row, probs_bf16, kb.count);
        }
      }
    }
  }

  const void* probs = bf16_probs ? static_cast<const void*>(s.probs_bf16)
                                 : static_cast<const void*>(s.scores);
  const int64_t stored = std::clamp<int64_t>(seq.kv_length - kb.first, 0, kb.count);
  const PhaseScope timing = phase_scope(Phase::kValuesProduct);
  values_product(probs, ld, rows, kb, stored, row_of(t_.v, p_.v, b, kv_head, kb.first), key_count,
                 kb.first > range.first, s);
}

void QueryBlockRunner::scores_product(const void* q, int64_t rows, const KeyBlock& kb,
                                      const char* keys, int64_t key_count, int64_t ld,
                                      const Scratch& s) const {
  const int64_t ldq = task_.ldq;
  if (!blocking_.decode_products) {
    gemm(
        scores_gemm(p_, task_, rows, kb), q, [&] { return gemm_keys(keys, kb, s); },
        packed_keys(block_index(kb), key_count, s), s.scores);
    return;
  }
  if (shapes_only_) return;
  const AttentionKernels& k = ctx_.kernels->attention;
  if (p_.dtype == POSENC_BF16) {
    k.decode_scores_bf16(static_cast<const uint16_t*>(q), ldq, rows,
                         reinterpret_cast<const uint16_t*>(keys), p_.k.token, kb.count,
                         p_.head_dim, p_.qk_alpha, s.scores, ld);
  } else {
    k.decode_scores_f32(static_cast<const float*>(q), ldq, rows,
                        reinterpret_cast<const float*>(keys), p_.k.token, kb.count, p_.head_dim,
                        p_.qk_alpha, s.scores, ld);
  }
}

void QueryBlockRunner::values_product(const void* probs, int64_t ld, int64_t rows,
                                      const KeyBlock& kb, int64_t stored, const char* values,
                                      int64_t key_count, bool accumulate, const Scratch& s) const {
  if (!blocking_.decode_products) {
    const MatmulShape shape = output_gemm(p_, task_, rows, kb, accumulate);
    const PackedOperand packed = packed_values(block_index(kb), key_count, s);
    if (stored == kb.count || blocking_.widens_products(p_)) {
      gemm(
          shape, probs, [&] { return gemm_values(values, kb, stored, s); }, packed, s.acc);
    } else if (!gemm_packed(shape, packed, probs, s.acc)) {
      // (Packed, the values past the length are zeros: pack_key_block.)
      values_past_length(probs, ld, rows, kb, stored, values, packed, accumulate, s);
    }
    return;
  }
  if (shapes_only_) return;
  const AttentionKernels& k = ctx_.kernels->attention;
  const float* probs_f32 = static_cast<const float*>(probs);
  if (p_.dtype == POSENC_BF16) {
    k.decode_values_bf16(probs_f32, ld, rows, reinterpret_cast<const uint16_t*>(values),
                         p_.v.token, stored, p_.value_head_dim, accumulate, s.acc,
                         task_.acc_ld);
  } else {
    k.decode_values_f32(probs_f32, ld, rows, reinterpret_cast<const float*>(values), p_.v.token,
                        stored, p_.value_head_dim, accumulate, s.acc, task_.acc_ld);
  }
}

void QueryBlockRunner::values_past_length(const void* probs, int64_t ld, int64_t rows,
                                          const KeyBlock& kb, int64_t stored,
                                          const char* values, const PackedOperand& packed,
                                          bool accumulate, const Scratch& s) const {
  // kb.first is a multiple of kKeyQuantum and kb.count at most stored
  // rounded up to one: the copy is at most kKeyQuantum rows.
  const int64_t in_place = stored / kKeyQuantum * kKeyQuantum;
  const int64_t copied = kb.count - in_place;
  const size_t element = dtype_bytes(p_.gemm_dtype);  // (never widened here)
  if (in_place > 0) {
    MatmulShape shape = output_gemm(p_, task_, rows, KeyBlock{kb.first, in_place}, accumulate);
    shape.lda = ld;
    gemm(
        shape, probs, [&] { return values; }, packed, s.acc);
  }
  const size_t row_bytes = size_t(p_.value_head_dim) * element;
  for (int64_t t = 0; t < copied && !shapes_only_; ++t) {
    uint8_t* row = s.value_tail + size_t(t) * row_bytes;
    if (in_place + t < stored) {
      std::memcpy(row, values + size_t((in_place + t) * p_.v.token) * element, row_bytes);
    } else {
      std::memset(row, 0, row_bytes);
    }
  }
  MatmulShape shape = output_gemm(p_, task_, rows, KeyBlock{kb.first + in_place, copied},
                                  accumulate || in_place > 0);
  shape.lda = ld;
  shape.ldb = p_.value_head_dim;
  matmul(shape, static_cast<const char*>(probs) + size_t(in_place) * element, s.value_tail,
         s.acc);
}

void QueryBlockRunner::store(const QueryBlock& qb, const Sequence& seq,
                             const Scratch& s) const {
  const PhaseScope timing = phase_scope(Phase::kStore);
  const int64_t d = p_.value_head_dim;
  const size_t out_bytes = dtype_bytes(p_.out_dtype);
  const int64_t out_rows = block_rows(qb.first);
  for (int64_t j = 0; j < blocking_.stacked_heads; ++j) {
    // The head's sink logit, in softmax-input units.
    const float sink = p_.sinks ? element_as_f32(t_.sinks, p_.dtype, qb.head + j) : 0.0f;
    for (int64_t r = 0; r < out_rows; ++r) {
      const int64_t row_index = j * qb.rows + r;  // among the task's computed rows
      const int64_t i = qb.first + r;
      char* out = out_row(qb, j, i);
      // A row not computed or past q_length, or one that saw no key
      // (causal) or only -inf scores (masked): zeros, not 0/0. Any finite
      // score makes the sum at least exp(0) = 1.
      if (r >= qb.rows || i >= seq.q_length || s.row_sum[row_index] == 0.0f) {
        std::memset(out, 0, size_t(d) * out_bytes);
        continue;
      }
      const float* acc = s.acc + row_index * task_.acc_ld;
      // acc and row_sum are relative to the row's largest score.
      const float factor =
          p_.sinks ? sink_normalizer(s.row_sum[row_index],
                                     sink - p_.softmax_scale * s.row_max[row_index])
                   : 1.0f / s.row_sum[row_index];
      if (p_.out_dtype == POSENC_BF16) {
        ctx_.kernels->attention.scale_to_bf16(acc, factor, reinterpret_cast<uint16_t*>(out), d);
      } else {
        ctx_.kernels->attention.scale_f32(acc, factor, reinterpret_cast<float*>(out), d);
      }
    }
  }
}

}  // namespace

void attention(const ExecContext& ctx, const AttentionProblem& problem, const AttentionPlan& plan,
               const posenc_attention_tensors& tensors, void* workspace) {
  PhaseScope before_region(Phase::kBeforeRegion);
  const AttentionBlocking& blocking = plan.blocking;
  const SlotLayout& layout = plan.layout;
  const Workspace memory(workspace, plan.workspace_bytes, ctx.num_threads);
  uint8_t* base = memory.base();
  // The bias kinds without q: their tables laid out once, before the region.
  auto* position_bias = reinterpret_cast<float*>(base + plan.position_bias);
  PositionBias::prepare(problem, tensors.table, *ctx.kernels, position_bias);
  const QueryBlockRunner runner(ctx, problem, tensors, blocking, layout, position_bias);
  auto scratch = [&](int slot) { return Scratch(base + size_t(slot) * layout.bytes, layout); };
  // Until its thread makes them, a slot holds no packed key block, nor
  // keys' logits of a disentangled bias.
  auto forget_kept_blocks = [&](int slot) {
    std::fill_n(scratch(slot).packed_block_kv, layout.packed.key_blocks, int64_t(-1));
    runner.forget_bias_logits(scratch(slot));
  };
  uint8_t* records = base + plan.partials;
  // A task's scratch: its thread's, with its result in its partial record
  // when the keys are split.
  auto task_scratch = [&](int64_t task, int slot) {
    const Scratch s = scratch(slot);
    return blocking.splits_keys() ? s.with_result_in(partial_at(records, plan.partial, task)) : s;
  };
  // The GEMM shapes follow the blocks (the last query block, causal key
  // counts, key ranges, bias windows) and, with per-sequence options, each
  // sequence's lengths and offset. They are made before the region by
  // running the GEMMs of a head's tasks dry (shapes only, nothing written):
  // on the first call of a problem those of its first head; with
  // per-sequence options on every call those of each sequence's first head,
  // which are lookups once the few rounded widths (kKeyQuantum) are made.
  // (The merge of split keys runs no GEMM.)
  const GemmSlots gemms(blocking.slots);
  auto bits = [](float value) {
    int32_t b;
    std::memcpy(&b, &value, sizeof b);
    return int64_t(b);
  };
  const AttentionProblem& p = problem;
  const std::array<int64_t, 28> key = {
      p.q_len, p.kv_len, p.head_dim, p.q.token, p.k.token, p.v.token, int64_t(p.dtype),
      bits(p.qk_alpha), bits(p.bias_alpha), int64_t(p.causal), p.sliding_window,
      p.query_offset, int64_t(p.bias),
      p.max_distance, p.num_buckets, p.map_height, p.map_width, p.kv_map_height, p.kv_map_width,
      int64_t(p.relative_values), blocking.slots, blocking.query_block, blocking.key_block,
      blocking.keys_per_split, int64_t(layout.packed.bytes()), p.value_head_dim,
      blocking.stacked_heads, int64_t(blocking.decode_products)};
  const PreparedProblem<struct AttentionTag, 28> prepared(key, gemms);
  const int64_t head_tasks = blocking.query_blocks * blocking.key_splits;
  if (p.per_sequence() || !prepared.before(gemms)) {
    const QueryBlockRunner dry_runner(ctx, problem, tensors, blocking, layout, position_bias,
                                      true);
    const GemmSlots::Use dry(gemms, 0, false, true);
    const int64_t sequences = p.per_sequence() ? p.batch : 1;
    forget_kept_blocks(0);
    for (int64_t b = 0; b < sequences; ++b) {
      for (int64_t i = 0; i < head_tasks; ++i) {
        const int64_t task = b * (p.heads / blocking.stacked_heads) * head_tasks + i;
        dry_runner.run(task, task_scratch(task, 0));
      }
    }
    if (!p.per_sequence()) prepared.remember(gemms);
  }
  // Each thread starts on a contiguous run of tasks (TaskRuns: a thread
  // done with its run takes over the back of another's). With per-sequence
  // lengths the heads' costs follow their sequences, so the (batch, kv
  // head) groups are visited with a stride near 0.618 of their count
  // (coprime with it): every run then starts with a share of every
  // sequence. A group's tasks stay together (its packed keys serve them
  // all), and with split keys go range by range, each range's readers one
  // after the other: a thread whose run holds part of a group then packs
  // the ranges it reads, each for all their readers it runs, not every
  // key for a few ranges of one reader. The order changes no bits.
  const int64_t groups = p.batch * p.kv_heads;
  const int64_t readers = blocking.kv_readers(p);
  const int64_t group_tasks = readers * blocking.key_splits;
  int64_t stride = 1;
  if (p.per_sequence() && blocking.slots > 1) {
    stride = std::max<int64_t>(1, groups * 618 / 1000);
    while (std::gcd(stride, groups) != 1) ++stride;
  }
  for (int slot = 0; slot < blocking.slots; ++slot) forget_kept_blocks(slot);
  const MergeCounts finished(base + plan.merge_counts,
                             blocking.splits_keys() ? blocking.query_tasks() : 0);
  before_region.end();
  parallel_for(blocking.slots, blocking.tasks, [&](int64_t visit, int slot) {
    const PhaseScope timing(Phase::kTasks);
    const int64_t group = visit / group_tasks * stride % groups;
    const int64_t range = visit % group_tasks / readers, reader = visit % readers;
    const int64_t task = (group * readers + reader) * blocking.key_splits + range;
    runner.run(task, task_scratch(task, slot));
    const int64_t query_task = task / blocking.key_splits;
    if (blocking.splits_keys() && finished.finish(query_task, blocking.key_splits)) {
      runner.merge(query_task, records, plan.partial, scratch(slot));
    }
  });
}

}  // namespace posenc::ops
