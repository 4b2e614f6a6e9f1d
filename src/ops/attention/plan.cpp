#include "ops/attention/plan.hpp"

#include <algorithm>

#include "ops/attention/bias.hpp"
#include "ops/attention/position_bias.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/checked_size.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// Query rows per block: a block's scores (rows x key block) stay near
// kBlockScores floats, in the L2 cache, with at least kQueryBlock and at
// most kMaxQueryBlock rows (tall blocks mean fewer, more efficient GEMMs).
constexpr int64_t kBlockScores = 64 * 1024;
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kMaxQueryBlock = 256;
constexpr int64_t kMinQueryBlock = 16;
// Short problems are cut into at least this many tasks when blocks can stay
// kMinQueryBlock tall. A constant, not the thread count: the blocks (and so
// the bits of the result) are the same whatever the thread count.
constexpr int64_t kMinTasks = 8;
// Keys up to kSingleKeyBlock are one block (an exact softmax in one step);
// longer rows are cut into kKeyBlock keys with the online softmax.
constexpr int64_t kSingleKeyBlock = 2048;
constexpr int64_t kKeyBlock = 1024;
// Under a sliding window a query block computes its keys from the key block
// holding its first query's first key: about the window's keys plus the
// block's rows and half a key block more. Key blocks of the window rounded
// up to kKeyQuantum, at least kMinWindowKeyBlock, and kQueryBlock rows keep
// that extra small (a window of all the keys is none).
constexpr int64_t kMinWindowKeyBlock = 128;
// Decoding: a problem of at most kMaxSplitQueries query rows (one query block)
// whose (batch, head) pairs are fewer than kSplitTasks has its keys split
// into ranges of at least kMinSplitKeys keys, about kSplitTasks tasks in
// all: enough for the threads of a large machine. A range is one key block
// of a multiple of kMinSplitKeys keys up to kKeyBlock, or whole kKeyBlock
// blocks. Fixed by the problem, like kMinTasks.
constexpr int64_t kMaxSplitQueries = 16;
constexpr int64_t kSplitTasks = 64;
constexpr int64_t kMinSplitKeys = 256;
// Grouped-query decoding: a kv head's query heads are stacked (their blocks
// one GEMM's rows) up to kMaxStackedRows rows, while the tasks stay at least
// kMinStackedTasks (a task for each core of a 16-core machine).
constexpr int64_t kMaxStackedRows = 64;
constexpr int64_t kMinStackedTasks = 16;
// Tasks of at most this many rows run the decode kernels (keys and values
// read as stored) instead of oneDNN's GEMMs, whose relayout of keys and
// values costs more than a few rows' products. At 8 rows the GEMMs were as
// fast (fp32) or faster (bf16) on a 2-core Zen 4.
constexpr int64_t kMaxDecodeRows = 4;
// A small problem, whose keys are at most kMaxSmallKeys, whose heads have at
// most kMaxSmallHeadDim elements and whose tasks at most kMaxSmallRows rows
// (a window of a few dozen tokens, such as Swin's 7 x 7), runs its products
// with the decode kernels (small_problem_products).
constexpr int64_t kMaxSmallKeys = 64;
constexpr int64_t kMaxSmallHeadDim = 64;
constexpr int64_t kMaxSmallRows = 64;
// Rows of a single reader's GEMMs from which packing its strided keys and
// values pays (packing_pays).
constexpr int64_t kMinRowsToPack = 64;

// The most bytes a workspace may take: past it (which no machine holds)
// its sizes are refused before they could wrap.
constexpr size_t kMaxWorkspaceBytes = size_t(1) << 62;
// What the workspace's overflows name.
constexpr const char* kWorkspace = "desc: the workspace it needs";

// Reserves `bytes` at `offset`, aligned; returns where it starts.
size_t reserve(size_t& offset, size_t bytes) {
  if (bytes > kMaxWorkspaceBytes || offset > kMaxWorkspaceBytes - bytes) {
    size_overflows(kWorkspace);
  }
  const size_t start = offset;
  offset += workspace_aligned(bytes);
  return start;
}

// The keys a block of up to `rows` consecutive queries sees: all of them,
// or under a sliding window narrower than them, each query's window (W keys
// causal, 2W - 1 on both sides) and one more for each further query.
int64_t visible_span(const AttentionProblem& p, int64_t rows) {
  if (!p.window_narrows()) return p.kv_len;
  const int64_t w = p.sliding_window;
  return std::min(p.kv_len, (p.causal ? w : 2 * w - 1) + rows - 1);
}

// How the keys of each query block are split: into `count` ranges of
// keys_per_split keys for decoding, else into one range (count 1,
// keys_per_split kv_len). The ranges cover the keys a block sees (its
// window's, not the whole cache, under a sliding window), from the key
// block holding its first key: the span and up to a key block's keys before
// it (its end rounded to kKeyQuantum adds no range: the ranges are whole
// multiples of kKeyQuantum, and so is their start). Not for RELATIVE_2D,
// whose logits GEMMs (the map's rows and columns, for all its keys) each
// range would make again at its first key block (bias.cpp's prepare_2d).
struct KeySplit {
  int64_t count, keys_per_split;
};
KeySplit key_split(const AttentionProblem& p, int64_t query_tasks) {
  if (p.q_len > kMaxSplitQueries || query_tasks >= kSplitTasks ||
      p.bias == POSENC_BIAS_RELATIVE_2D) {
    return {1, p.kv_len};
  }
  const int64_t span = visible_span(p, p.q_len);  // one query block (q_len <= 16)
  const int64_t ranges = std::min(ceil_div(kSplitTasks, query_tasks), span / kMinSplitKeys);
  if (ranges <= 1) return {1, p.kv_len};
  const int64_t keys = ceil_div(span, ranges);
  const int64_t keys_per_split = round_up(keys, keys <= kKeyBlock ? kMinSplitKeys : kKeyBlock);
  const int64_t key_block = std::min(kKeyBlock, keys_per_split);
  const int64_t computed = std::min(p.kv_len, span + key_block - 1);
  return {ceil_div(computed, keys_per_split), keys_per_split};
}

// Whether the tasks of `rows` rows of a small problem run their products
// with the decode kernels rather than oneDNN's GEMMs, each of which then
// takes a few microseconds, a large part of them its fixed cost per call and
// its relayout of B (docs/design.md section 5 has the measurements). Not on
// the baseline path (SSE2 without FMA), whose kernels ran slower than
// oneDNN's GEMMs, nor where the problem's GEMMs run in bf16
// (attention_gemm_dtype), nor for bf16 on a path whose decode kernels use
// AVX512-BF16 (runs_extension_kernels): built for a few rows, they took
// 1.05-1.25x the time of the widened fp32 GEMMs on windows of 49 and 64
// tokens (a 2-core Emerald Rapids VM without AMX), where the AVX2 path's
// bf16 kernels took 0.75-0.95x theirs.
bool small_problem_products(const AttentionProblem& p, int64_t rows, posenc_isa isa) {
  const bool avx512_bf16_kernels = runs_extension_kernels(isa, kCpuAvx512Bf16);
  return isa != POSENC_ISA_BASELINE && p.gemm_dtype == POSENC_F32 &&
         !(p.dtype == POSENC_BF16 && avx512_bf16_kernels) && p.kv_len <= kMaxSmallKeys &&
         std::max(p.head_dim, p.value_head_dim) <= kMaxSmallHeadDim && rows <= kMaxSmallRows;
}

// Whether tasks of `rows` rows run their products with the decode kernels.
bool runs_decode_products(const AttentionProblem& p, int64_t rows, posenc_isa isa) {
  return rows <= kMaxDecodeRows || small_problem_products(p, rows, isa);
}

// The query heads a task stacks (decoding): the most of a kv head's group
// (a divisor of it) whose single query blocks fit kMaxStackedRows, while
// the tasks (their key ranges counted) stay at least kMinStackedTasks, or
// as many as without stacking if fewer. A task reads its keys and values
// once for all its rows: unstacked, each query head's task reads them
// again (group times the bytes in all), and on a short cache, too short to
// split into many ranges, a thread would read several heads' worth.
// A single query a head in groups of up to 2 kMaxDecodeRows stacks within
// the decode kernels' rows, each key then read at most twice, rather than
// into oneDNN's GEMMs, which relayout each key block on every call: on a
// 2-core Zen 5, B1 H64/8 q1 kv4096 d128 took 1.5x as long stacked 8 (GEMMs)
// as 4 (decode kernels). Larger groups, or more queries (4 queries of
// H32/4 against 32768 keys: 2x as long unstacked), stack into the GEMMs.
int64_t stacked_heads(const AttentionProblem& p, int64_t query_blocks, posenc_isa isa) {
  if (query_blocks > 1 || p.q_len > kMaxSplitQueries) return 1;
  const int64_t group = p.heads / p.kv_heads;
  const int64_t heads_total = p.batch * p.heads;
  const int64_t unstacked_tasks = heads_total * key_split(p, heads_total).count;
  const bool keeps_decoding = p.q_len == 1 && group <= 2 * kMaxDecodeRows;
  for (int64_t s = std::min(group, kMaxStackedRows / p.q_len); s > 1; --s) {
    if (group % s != 0 || (keeps_decoding && !runs_decode_products(p, s, isa))) continue;
    const int64_t query_tasks = heads_total / s;
    if (query_tasks * key_split(p, query_tasks).count >=
        std::min(kMinStackedTasks, unstacked_tasks)) {
      return s;
    }
  }
  return 1;
}

// A kv head's key blocks are packed by a thread for its tasks that read
// them (kv_readers: blocks of its query heads), each block when a task first
// reads it. For a single reader the packing is not reused, and pays only
// where it moves the GEMMs to oneDNN's brgemm kernels (AMX among them),
// which take no strided B: when the rows of the keys or values are strided,
// the GEMMs have at least kMinRowsToPack rows (the copy is then small
// against them) and the keys are not split: packing split ranges read by
// one task each took 1.00-1.07x as long on a 2-core Zen 4 (fp32 and bf16, 1
// and 2 threads; the bench row of H128/8 q4 on a token-major cache; not
// measured with AMX).
bool packing_pays(const AttentionProblem& p, const AttentionBlocking& b) {
  if (b.decode_products) return false;  // they read keys and values as stored
  // (Widened keys and values are dense.)
  const bool kv_rows_dense =
      b.widens_products(p) || (p.k.token == p.head_dim && p.v.token == p.value_head_dim);
  return b.kv_readers(p) > 1 ||
         (!kv_rows_dense && b.rows() >= kMinRowsToPack && !b.splits_keys());
}

// The blocks depend on the problem and the ISA path only; threads sets the
// scratch slots.
AttentionBlocking attention_blocking(const AttentionProblem& p, int threads, posenc_isa isa) {
  const int64_t heads_total = p.batch * p.heads;
  int64_t key_block = p.kv_len <= kSingleKeyBlock ? p.kv_len : kKeyBlock;
  int64_t rows = std::clamp(kBlockScores / key_block, kQueryBlock, kMaxQueryBlock);
  if (p.window_narrows()) {
    key_block = std::min(
        key_block, std::max(kMinWindowKeyBlock, round_up(p.sliding_window, kKeyQuantum)));
    rows = kQueryBlock;
  }
  int64_t blocks = ceil_div(p.q_len, rows);
  while (heads_total * blocks < kMinTasks &&
         ceil_div(p.q_len, blocks + 1) >= kMinQueryBlock) {
    ++blocks;
  }
  AttentionBlocking b;
  b.query_block = ceil_div(p.q_len, blocks);
  // Blocks of whole kKeyQuantum rows where that keeps their number: a
  // causal block then sees keys [0, a multiple of them) from query 0, whole
  // blocks of oneDNN's packed rows (16 fp32, 32 bf16), which its GEMMs read
  // packed (matmul_on_packed_b) rather than as stored.
  const int64_t whole_rows = round_up(b.query_block, kKeyQuantum);
  if (ceil_div(p.q_len, whole_rows) == ceil_div(p.q_len, b.query_block)) {
    b.query_block = std::min(whole_rows, p.q_len);
  }
  b.query_blocks = ceil_div(p.q_len, b.query_block);
  b.stacked_heads = stacked_heads(p, b.query_blocks, isa);
  b.decode_products = runs_decode_products(p, b.rows(), isa);
  b.copies_queries = b.stacked_heads > 1 ||
                     (!b.decode_products && (p.q.token != p.head_dim || p.gemms_widen_bf16()));
  const int64_t query_tasks = heads_total / b.stacked_heads * b.query_blocks;
  const KeySplit split = key_split(p, query_tasks);
  b.key_splits = split.count;
  b.keys_per_split = split.keys_per_split;
  b.key_block = split.count > 1 ? std::min(kKeyBlock, split.keys_per_split) : key_block;
  b.tasks = query_tasks * b.key_splits;
  b.slots = int(std::min<int64_t>(threads, b.tasks));
  return b;
}

SlotLayout slot_layout(const AttentionProblem& p, const AttentionBlocking& b) {
  const size_t rows = size_t(b.rows());
  const bool bf16_gemms = p.gemm_dtype == POSENC_BF16;
  const bool widens = b.widens_products(p);
  const TaskGemms task = b.task_gemms(p);
  SlotLayout s{};
  s.scores_ld = gemm_output_stride(b.key_block, p.gemm_dtype);
  size_t offset = 0;
  s.dense_q = reserve(
      offset, b.copies_queries ? rows * size_t(p.head_dim) * dtype_bytes(b.products_dtype(p)) : 0);
  // Per-sequence tensors are not known to the size query: always there.
  // (Widened values past the length are zeros in wide_values.)
  s.value_tail = reserve(offset, b.decode_products || widens
                                     ? 0
                                     : size_t(kKeyQuantum * p.value_head_dim) * p.element_bytes());
  s.wide_bias_q =
      reserve(offset, b.widens_bias_q(p) ? rows * size_t(p.head_dim) * sizeof(float) : 0);
  s.wide_keys = reserve(offset, widens ? size_t(b.key_block * p.head_dim) * sizeof(float) : 0);
  s.wide_values =
      reserve(offset, widens ? size_t(b.key_block * p.value_head_dim) * sizeof(float) : 0);
  const size_t block = rows * size_t(s.scores_ld);
  s.scores = reserve(offset, block * sizeof(float));
  // The decode kernels take fp32 probabilities.
  s.probs_bf16 = reserve(offset, bf16_gemms && !b.decode_products ? block * sizeof(uint16_t) : 0);
  const int64_t bias_floats = AttentionBias::scratch_floats(p, b.query_block, b.key_block);
  const bool bias_per_head = p.bias == POSENC_BIAS_RELATIVE_2D && b.stacked_heads > 1;
  s.bias_head_stride = bias_per_head ? round_up(bias_floats, 16) : 0;  // (64-byte lines)
  s.bias = reserve(offset, size_t(std::max(b.stacked_heads * s.bias_head_stride, bias_floats)) *
                               sizeof(float));
  s.acc = reserve(offset, rows * size_t(task.acc_ld) * sizeof(float));
  s.row_max = reserve(offset, rows * sizeof(float));
  s.row_sum = reserve(offset, rows * sizeof(float));
  s.value_window = p.relative_values ? RelativeValues::max_window(p, b.query_block) : 0;
  const size_t weights = rows * size_t(s.value_window);
  s.weights = reserve(offset, weights * sizeof(float));
  s.weights_bf16 = reserve(offset, bf16_gemms ? weights * sizeof(uint16_t) : 0);
  s.wide_table_rows = reserve(
      offset, size_t(std::max(AttentionBias::wide_table_rows_floats(p, b.query_block, b.key_block),
                              RelativeValues::wide_table_rows_floats(p, b.query_block))) *
                  sizeof(float));
  s.packed = packing_pays(p, b) ? packed_key_values(p, task) : PackedKeyValues{0, 0, 0};
  s.packed_keys = reserve(offset, size_t(s.packed.key_blocks) * s.packed.key_block_bytes);
  s.packed_values = reserve(offset, size_t(s.packed.key_blocks) * s.packed.value_block_bytes);
  s.packed_block_kv = reserve(offset, size_t(s.packed.key_blocks) * sizeof(int64_t));
  s.bytes = offset;
  return s;
}

}  // namespace

AttentionPlan plan_attention(const AttentionProblem& problem, int threads, posenc_isa isa) {
  const AttentionBlocking blocking = attention_blocking(problem, threads, isa);
  const SlotLayout layout = slot_layout(problem, blocking);
  AttentionPlan plan{blocking, layout, {}, 0, 0, 0, 0};
  size_t offset = 0;
  reserve(offset, checked_size_product(size_t(blocking.slots), layout.bytes, kWorkspace));
  plan.partials = offset;
  plan.merge_counts = offset;
  if (blocking.splits_keys()) {
    plan.partial = partial_layout(blocking.rows(), blocking.task_gemms(problem).acc_ld);
    plan.partials = reserve(
        offset, checked_size_product(size_t(blocking.tasks), plan.partial.bytes, kWorkspace));
    plan.merge_counts = reserve(offset, MergeCounts::bytes(blocking.query_tasks()));
  }
  plan.position_bias =
      reserve(offset, checked_size_product(size_t(PositionBias::prepared_floats(problem)),
                                           sizeof(float), kWorkspace));
  plan.workspace_bytes = offset + kWorkspaceAlign;
  return plan;
}

}  // namespace posenc::ops
