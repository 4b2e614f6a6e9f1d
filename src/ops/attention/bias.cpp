#include "ops/attention/bias.hpp"

#include <algorithm>
#include <cstring>

#include "ops/attention/widen.hpp"
#include "runtime/matmul.hpp"

namespace posenc::ops {
namespace {

// Row `first_row` of the table of head `head` (tables of `rows` rows of
// `columns` elements).
const void* table_row(const AttentionProblem& p, const void* table, int64_t head, int64_t rows,
                      int64_t first_row, int64_t columns) {
  const int64_t row = (p.tables_per_head ? head * rows : 0) + first_row;
  return static_cast<const char*>(table) + size_t(row * columns) * p.element_bytes();
}

// The same for the tables of q's logits, of head_dim columns.
const void* table_row(const AttentionProblem& p, const void* table, int64_t head, int64_t rows,
                      int64_t first_row) {
  return table_row(p, table, head, rows, first_row, p.head_dim);
}

// `count` table rows of `columns` elements from `rows` as a GEMM reads them:
// in place, or widened into `widened` where the problem widens bf16 (null
// in a dry run, whose GEMMs read nothing: the rows are not widened).
const void* gemm_rows(const AttentionProblem& p, const ElementwiseKernels& kernels,
                      const void* rows, int64_t count, int64_t columns, float* widened) {
  if (!p.gemms_widen_bf16() || widened == nullptr) return rows;
  widen_rows(kernels, rows, columns, count, columns, widened);
  return widened;
}

// out[r, c] (+)= alpha * q[r] . rows[c] for r < qb.rows, c < count (rows
// as gemm_rows gives them).
void logits_gemm(const AttentionProblem& p, const QueryBlock& qb, const void* rows,
                 int64_t count, float alpha, bool accumulate, float* out, int64_t ldo) {
  MatmulShape s;
  s.m = qb.rows;
  s.n = count;
  s.k = p.head_dim;
  s.lda = qb.ldq;
  s.ldb = p.head_dim;
  s.ldc = ldo;
  s.transpose_b = true;
  s.ab_type = p.gemm_dtype;
  s.alpha = alpha;
  s.accumulate = accumulate;
  matmul(s, qb.q, rows, out);
}

// out[c] = alpha u . rows[c] for c < count (u and the rows as stored, in
// the problem's dtype, rows head_dim apart): the relative query bias's
// logits against a 1D block's window, by the decode kernel of one row (no
// GEMM call per block: decode steps' blocks are a row or a few).
void query_bias_logits(const AttentionProblem& p, const AttentionKernels& kernels, const void* u,
                       const void* rows, int64_t count, float* out) {
  if (p.dtype == POSENC_BF16) {
    kernels.decode_scores_bf16(static_cast<const uint16_t*>(u), p.head_dim, 1,
                               static_cast<const uint16_t*>(rows), p.head_dim, count, p.head_dim,
                               p.bias_alpha, out, count);
  } else {
    kernels.decode_scores_f32(static_cast<const float*>(u), p.head_dim, 1,
                              static_cast<const float*>(rows), p.head_dim, count, p.head_dim,
                              p.bias_alpha, out, count);
  }
}

// Whether a RELATIVE_2D query's logits are gathered into key order
// (prepare_2d), or read in place as a window of the table's rows.
bool gathers_2d(const AttentionProblem& p) {
  return !(p.axis_h().is_window() && p.axis_w().is_window());
}

// Where the keys [first_key, ..) of the query at query_pos find their rows
// in a window of a 1D relative table's rows starting at window_first: key
// first_key + j at column clamp(j + shift, lo, hi) (the arguments of
// gather_add and scatter_add).
struct WindowColumns {
  int64_t shift, lo, hi;
};
WindowColumns window_columns(const RelativeIndex& index, int64_t query_pos, int64_t first_key,
                             int64_t window_first) {
  return WindowColumns{first_key - query_pos + index.center - window_first, -window_first,
                       index.readable - 1 - window_first};
}

// The 1D table of posenc/attention.h for this problem: its rows (the stride
// of per-head tables) from the largest query offset of the call.
RelativeIndex relative_index_of(const AttentionProblem& p) {
  return relative_index(p.max_query_offset, p.q_len, p.kv_len, p.max_distance);
}

// The same table as the queries of a sequence at query_offset index it.
RelativeIndex relative_index_of(const AttentionProblem& p, int64_t query_offset) {
  RelativeIndex index = relative_index(query_offset, p.q_len, p.kv_len, p.max_distance);
  index.rows = relative_index_of(p).rows;
  return index;
}

// The rows used by queries at positions [query_pos, query_pos + queries)
// against keys [first_key, first_key + keys). With per-sequence options the
// window is widened (within the table) to queries + keys - 1 rows, which
// only clipping makes it shorter than: its GEMM's shape then does not depend
// on the sequence's offset (attention.cpp keeps the shapes few).
RowWindow relative_window(const AttentionProblem& p, const RelativeIndex& index,
                          int64_t query_pos, int64_t queries, int64_t first_key, int64_t keys) {
  const int64_t first = index.row(first_key - (query_pos + queries - 1));
  const int64_t last = index.row(first_key + keys - 1 - query_pos);
  RowWindow window{first, last - first + 1};
  if (p.per_sequence()) {
    window.count = std::min(index.readable, queries + keys - 1);
    window.first = std::min(first, index.readable - window.count);
  }
  return window;
}

// The most table rows a query block of 1D relative logits reads over a key
// block: its window, at most the table's readable rows.
int64_t longest_window_1d(const AttentionProblem& p, int64_t query_block, int64_t key_block) {
  return std::min(relative_index_of(p).readable, key_block + query_block - 1);
}

// DISENTANGLED's window over a query block of up to `queries` rows and a
// key block of up to `keys`: as many table rows as the pair has distances
// (at most the table's; no bucket skips a row, so the pair's rows fit).
int64_t disentangled_window(const AttentionProblem& p, int64_t queries, int64_t keys) {
  return std::min(p.disentangled().rows(), queries + keys - 1);
}

// The floats of DISENTANGLED's scratch: the queries' logits, the keys'
// (all keys' in the whole table way), the keys widened (where the problem
// widens bf16), the columns (int32, an even count) and the (batch, head)
// whose keys' logits the whole table way keeps (int64).
struct DisentangledScratch {
  int64_t ld, key_logits, wide_keys, columns, kept_head, floats;
};
DisentangledScratch disentangled_scratch(const AttentionProblem& p, const DisentangledWay& way) {
  DisentangledScratch s{};
  const int64_t rows = way.whole_table ? p.disentangled().rows()
                                       : disentangled_window(p, way.query_block, way.key_block);
  s.ld = gemm_output_stride(rows, p.gemm_dtype);
  s.key_logits = way.query_block * s.ld;
  s.wide_keys = s.key_logits + (way.whole_table ? p.kv_len : way.key_block) * s.ld;
  s.columns = s.wide_keys + (p.gemms_widen_bf16() ? way.key_block * p.head_dim : 0);
  s.kept_head = s.columns + (way.query_block + way.key_block) / 2 * 2;
  s.floats = s.kept_head + 2;
  return s;
}

// Whether a block pair's keys' logits are made at the rows its queries read
// (each key against its rows, by the decode kernel) rather than against its
// window of `window` rows (a GEMM): for few queries against many rows (a
// decode step: one row a key, where the GEMM makes `window`).
bool reads_few_key_rows(int64_t queries, int64_t window) { return 16 * queries <= window; }

// The whole table way keeps all keys' logits of a head: at most this many
// floats (4 MiB), e.g. 2048 keys against DeBERTa-v3's 512 rows.
constexpr int64_t kMaxKeptKeyLogits = int64_t(1) << 20;

}  // namespace

DisentangledWay disentangled_way(const AttentionProblem& p, int64_t query_block,
                                 int64_t key_block) {
  DisentangledWay way{false, query_block, key_block};
  const int64_t rows = p.bias == POSENC_BIAS_DISENTANGLED ? p.disentangled().rows() : 0;
  // Decoding (q_len <= 16: stacked heads, split keys) and narrow windows
  // (most keys' logits unread) keep to the pairs.
  if (rows == 0 || p.q_len <= 16 || p.window_narrows() || p.kv_len == 0 ||
      rows > kMaxKeptKeyLogits / p.kv_len) {
    return way;
  }
  // Rows times columns of the logits GEMMs per head: each pair's queries
  // and keys against its window, or every query and key against the table.
  const double pairs = double((p.q_len + query_block - 1) / query_block) *
                       double((p.kv_len + key_block - 1) / key_block) *
                       double(query_block + key_block) *
                       double(disentangled_window(p, query_block, key_block));
  way.whole_table = double(rows) * double(p.q_len + p.kv_len) < pairs;
  return way;
}

AttentionBias::AttentionBias(const AttentionProblem& problem,
                             const posenc_attention_tensors& tensors, const KernelTable& kernels,
                             const float* position_bias, bool shapes_only, int64_t query_block,
                             int64_t key_block)
    : p_(problem),
      t_(tensors),
      kernels_(kernels.attention_bias),
      products_(kernels.attention),
      elementwise_(kernels.elementwise),
      position_(problem, tensors.table, kernels, position_bias),
      shapes_only_(shapes_only),
      disentangled_(disentangled_way(problem, query_block, key_block)) {}

void AttentionBias::forget(float* scratch) const {
  if (!disentangled_.whole_table) return;
  const int64_t none = -1;
  std::memcpy(scratch + disentangled_scratch(p_, disentangled_).kept_head, &none, sizeof none);
}

int64_t AttentionBias::scratch_floats(const AttentionProblem& p, int64_t query_block,
                                      int64_t key_block) {
  switch (p.bias) {
    case POSENC_BIAS_RELATIVE_1D: {
      const int64_t window = longest_window_1d(p, query_block, key_block);
      // With a relative query bias, its row of logits.
      const int64_t query_bias = p.relative_query_bias ? window : 0;
      return query_block * gemm_output_stride(window, p.gemm_dtype) + query_bias;
    }
    case POSENC_BIAS_DISENTANGLED:
      return disentangled_scratch(p, disentangled_way(p, query_block, key_block)).floats;
    case POSENC_BIAS_RELATIVE_2D: {
      const RelativeAxis h = p.axis_h(), w = p.axis_w();
      const int64_t gathered = gathers_2d(p) ? h.k + w.k : 0;
      return query_block * (gemm_output_stride(h.rows(), p.gemm_dtype) +
                            gemm_output_stride(w.rows(), p.gemm_dtype) + gathered);
    }
    default:
      return 0;
  }
}

int64_t AttentionBias::wide_table_rows_floats(const AttentionProblem& p, int64_t query_block,
                                              int64_t key_block) {
  if (!p.gemms_widen_bf16()) return 0;
  switch (p.bias) {
    case POSENC_BIAS_ABSOLUTE:
      return key_block * p.head_dim;
    case POSENC_BIAS_RELATIVE_1D:
      return longest_window_1d(p, query_block, key_block) * p.head_dim;
    case POSENC_BIAS_DISENTANGLED:  // one table's rows at a time
      return (disentangled_way(p, query_block, key_block).whole_table
                  ? p.disentangled().rows()
                  : disentangled_window(p, query_block, key_block)) *
             p.head_dim;
    case POSENC_BIAS_RELATIVE_2D:
      return std::max(p.axis_h().rows(), p.axis_w().rows()) * p.head_dim;
    default:
      return 0;
  }
}

BlockLogits AttentionBias::prepare(const QueryBlock& qb, const KeyBlock& kb, int64_t first_key,
                                   float* scores, int64_t ld, float* scratch,
                                   float* wide_table_rows) const {
  BlockLogits logits{scratch, 0, nullptr, 0, RowWindow{0, 0}, {}};
  switch (p_.bias) {
    case POSENC_BIAS_NONE:
    case POSENC_BIAS_TABLE_2D:  // no GEMM: PositionBias in add_row
    case POSENC_BIAS_TABLE_1D:
    case POSENC_BIAS_T5:
    case POSENC_BIAS_ALIBI:
    case POSENC_BIAS_MAX_ENUM:  // rejected by the C ABI
      break;
    case POSENC_BIAS_ABSOLUTE: {
      const void* rows = table_row(p_, t_.table, qb.head, p_.kv_len, kb.first);
      logits_gemm(p_, qb, gemm_rows(p_, elementwise_, rows, kb.count, p_.head_dim, wide_table_rows),
                  kb.count, p_.bias_alpha, true, scores, ld);
      break;
    }
    case POSENC_BIAS_RELATIVE_1D: {
      logits.index = relative_index_of(p_, qb.query_offset);
      logits.window = relative_window(p_, logits.index, qb.query_offset + qb.first, qb.rows,
                                      kb.first, kb.count);
      logits.ld = gemm_output_stride(logits.window.count, p_.gemm_dtype);
      const int64_t count = logits.window.count;
      const void* stored = table_row(p_, t_.table, qb.head, logits.index.rows, logits.window.first);
      logits_gemm(p_, qb, gemm_rows(p_, elementwise_, stored, count, p_.head_dim, wide_table_rows),
                  count, p_.bias_alpha, false, scratch, logits.ld);
      if (p_.relative_query_bias && !shapes_only_) {
        // (q_r + u) . R = q_r . R + u . R: u's logits added to each query's,
        // so that q + u is never rounded.
        float* u_logits = scratch + qb.rows * logits.ld;
        const void* u = static_cast<const char*>(t_.relative_query_bias) +
                        size_t(qb.head * p_.head_dim) * p_.element_bytes();
        query_bias_logits(p_, products_, u, stored, count, u_logits);
        for (int64_t r = 0; r < qb.rows; ++r) {
          float* row = scratch + r * logits.ld;
          elementwise_.add_f32(row, u_logits, row, count);
        }
      }
      break;
    }
    case POSENC_BIAS_RELATIVE_2D:
      logits = prepare_2d(qb, kb.first == first_key, scratch, wide_table_rows);
      break;
    case POSENC_BIAS_DISENTANGLED:
      logits = prepare_disentangled(qb, kb, kb.first == first_key, scratch, wide_table_rows);
      break;
  }
  return logits;
}

float AttentionBias::add_row(const QueryBlock& qb, const KeyBlock& kb, int64_t r,
                             int64_t valid, float* row, const BlockLogits& logits) const {
  const bool masked = p_.mask.batch > 0;
  if (p_.softcap.outer > 0) {
    const float capped_max = kernels_.softcap(row, valid, p_.softcap.inner, p_.softcap.outer);
    if (p_.bias == POSENC_BIAS_NONE && !masked) return capped_max;
  }
  switch (p_.bias) {
    case POSENC_BIAS_NONE:
    case POSENC_BIAS_ABSOLUTE:  // already in the scores
    case POSENC_BIAS_MAX_ENUM:  // rejected by the C ABI
      break;  // the mask's pass (or the maximum's) is the only one
    case POSENC_BIAS_TABLE_2D: {
      // A window's row as one run (expanded, or staged here): the mask's
      // pass adds it. Else (past a block) as the other kinds.
      float stage[PositionBias::kStageFloats];
      const float* run =
          valid > 0 ? position_.window_row(qb.head, qb.first + r, kb.first, kb.count, stage)
                    : nullptr;
      if (run != nullptr) return add_mask_row(qb, kb, r, valid, run, row);
      [[fallthrough]];
    }
    case POSENC_BIAS_TABLE_1D:
    case POSENC_BIAS_T5:
    case POSENC_BIAS_ALIBI: {
      const int64_t i = qb.first + r;
      const float row_max = position_.add_row(qb.head, i, qb.query_offset + i, kb.first, valid,
                                              gate_of(qb, i), row);
      if (!masked) return row_max;
      break;
    }
    case POSENC_BIAS_RELATIVE_1D: {
      const auto c = window_columns(logits.index, qb.query_offset + qb.first + r, kb.first,
                                    logits.window.first);
      const float row_max =
          kernels_.gather_add(logits.logits + r * logits.ld, c.shift, c.lo, c.hi, 1.0f, row,
                              valid);
      if (!masked) return row_max;
      break;
    }
    case POSENC_BIAS_DISENTANGLED: {
      const int64_t keys_in = kb.first - logits.first_key;  // (past a window's hidden keys)
      const float row_max = kernels_.add_pair_columns(
          logits.logits + r * logits.ld, logits.col_logits + keys_in * logits.ld_cols,
          logits.ld_cols, logits.columns + keys_in + (qb.rows - 1 - r), row, valid);
      if (!masked) return row_max;
      break;
    }
    case POSENC_BIAS_RELATIVE_2D: {
      // Gathered logits are in key order already; else the query's window.
      const int64_t Y = p_.map_width, x1 = (qb.first + r) / Y, y1 = (qb.first + r) % Y;
      const bool gathered = gathers_2d(p_);
      const float* row_logits =
          logits.logits + r * logits.ld + (gathered ? 0 : p_.axis_h().shift(x1));
      const float* col_logits =
          logits.col_logits + r * logits.ld_cols + (gathered ? 0 : p_.axis_w().shift(y1));
      const float row_max =
          kernels_.add_2d(row_logits, col_logits, p_.kv_map_width, kb.first, row, valid);
      if (!masked) return row_max;
      break;
    }
  }
  return add_mask_row(qb, kb, r, valid, nullptr, row);
}

float AttentionBias::gate_of(const QueryBlock& qb, int64_t i) const {
  if (!p_.bias_gate) return 1.0f;
  return element_as_f32(t_.bias_gate, p_.dtype, (qb.batch * p_.heads + qb.head) * p_.q_len + i);
}

BlockLogits AttentionBias::prepare_2d(const QueryBlock& qb, bool first_block, float* scratch,
                                      float* wide_table_rows) const {
  const RelativeAxis h = p_.axis_h(), w = p_.axis_w();
  const int64_t ld_h = gemm_output_stride(h.rows(), p_.gemm_dtype);
  const int64_t ld_w = gemm_output_stride(w.rows(), p_.gemm_dtype);
  float* logits_h = scratch;
  float* logits_w = logits_h + qb.rows * ld_h;
  float* gathered_h = logits_w + qb.rows * ld_w;
  float* gathered_w = gathered_h + qb.rows * h.k;
  const bool gathered = gathers_2d(p_);
  const BlockLogits logits = gathered
      ? BlockLogits{gathered_h, h.k, gathered_w, w.k, RowWindow{0, 0}, {}}
      : BlockLogits{logits_h, ld_h, logits_w, ld_w, RowWindow{0, 0}, {}};
  if (!first_block) return logits;  // the first block's logits serve the others
  auto table = [&](const void* tables, int64_t rows) {
    return gemm_rows(p_, elementwise_, table_row(p_, tables, qb.head, rows, 0), rows, p_.head_dim,
                     wide_table_rows);
  };
  logits_gemm(p_, qb, table(t_.table_h, h.rows()), h.rows(), p_.bias_alpha, false, logits_h, ld_h);
  logits_gemm(p_, qb, table(t_.table_w, w.rows()), w.rows(), p_.bias_alpha, false, logits_w, ld_w);
  if (!gathered || shapes_only_) return logits;  // (a dry run made no logits)
  // Row x2 of query (x1, y1)'s row logits is table row h.row(x1, x2); its
  // column logits likewise: gathered once per query block, for add_2d.
  for (int64_t r = 0; r < qb.rows; ++r) {
    const int64_t x1 = (qb.first + r) / p_.map_width, y1 = (qb.first + r) % p_.map_width;
    for (int64_t x2 = 0; x2 < h.k; ++x2) {
      gathered_h[r * h.k + x2] = logits_h[r * ld_h + h.row(x1, x2)];
    }
    for (int64_t y2 = 0; y2 < w.k; ++y2) {
      gathered_w[r * w.k + y2] = logits_w[r * ld_w + w.row(y1, y2)];
    }
  }
  return logits;
}

BlockLogits AttentionBias::prepare_disentangled(const QueryBlock& qb, const KeyBlock& kb,
                                                bool first_block, float* scratch,
                                                float* wide_table_rows) const {
  const DisentangledIndex index = p_.disentangled();
  const DisentangledScratch layout = disentangled_scratch(p_, disentangled_);
  float* key_logits = scratch + layout.key_logits;
  float* wide_keys = scratch + layout.wide_keys;
  auto* columns = reinterpret_cast<int32_t*>(scratch + layout.columns);
  // Distances r = query - key over the block, from the first query against
  // the last key to the last query against the first key; rows follow r.
  const int64_t last_query = qb.query_offset + qb.first + qb.rows - 1;
  RowWindow window{0, index.rows()};
  BlockLogits logits{scratch, layout.ld, key_logits, layout.ld, window, {}, columns, kb.first};
  bool at_their_rows = false;  // (the pairs' way for few queries)
  auto table = [&](const void* tables, int64_t first, int64_t rows) {
    const void* stored = table_row(p_, tables, qb.head, index.rows(), first);
    return gemm_rows(p_, elementwise_, stored, rows, p_.head_dim, wide_table_rows);
  };
  if (disentangled_.whole_table) {
    // The queries' logits at the task's first key block; the keys' once per
    // (batch, head) on this thread (kept_head), for all keys.
    if (first_block) {
      logits_gemm(p_, qb, table(t_.table, 0, window.count), window.count, p_.bias_alpha, false,
                  scratch, layout.ld);
    }
    int64_t kept = -1;
    const int64_t head = qb.batch * p_.heads + qb.head;
    std::memcpy(&kept, scratch + layout.kept_head, sizeof kept);
    if (shapes_only_ || kept != head) {
      // (Until all are made the slot keeps no head's: a GEMM may throw.)
      if (!shapes_only_) AttentionBias::forget(scratch);
      for (int64_t first = 0; first < p_.kv_len; first += disentangled_.key_block) {
        const int64_t keys = std::min(disentangled_.key_block, p_.kv_len - first);
        keys_against_table(qb, first, keys, 0, window.count, key_logits + first * layout.ld,
                           layout.ld, wide_keys, wide_table_rows);
      }
      if (!shapes_only_) std::memcpy(scratch + layout.kept_head, &head, sizeof head);
    }
    logits.col_logits = key_logits + kb.first * layout.ld;
  } else {
    const int64_t lowest = index.row(qb.query_offset + qb.first - (kb.first + kb.count - 1));
    window.count = disentangled_window(p_, qb.rows, kb.count);
    window.first = std::min(lowest, index.rows() - window.count);
    logits.window = window;
    logits.ld = logits.ld_cols = gemm_output_stride(window.count, p_.gemm_dtype);
    logits_gemm(p_, qb, table(t_.table, window.first, window.count), window.count,
                p_.bias_alpha, false, scratch, logits.ld);
    at_their_rows = reads_few_key_rows(qb.rows, window.count);
    if (!at_their_rows) {
      keys_against_table(qb, kb.first, kb.count, window.first, window.count, key_logits,
                         logits.ld, wide_keys, wide_table_rows);
    }
  }
  if (shapes_only_) return logits;
  for (int64_t t = 0; t < qb.rows + kb.count - 1; ++t) {
    columns[t] = int32_t(index.row(last_query - kb.first - t) - window.first);
  }
  if (at_their_rows) {
    keys_at_their_rows(qb, kb, columns, window, key_logits, logits.ld);
  }
  return logits;
}

const char* AttentionBias::key_rows(const QueryBlock& qb, int64_t first_key) const {
  const int64_t row = qb.batch * p_.k.batch + p_.kv_head(qb.head) * p_.k.head;
  return static_cast<const char*>(t_.k) + size_t(row + first_key * p_.k.token) * p_.element_bytes();
}

void AttentionBias::keys_at_their_rows(const QueryBlock& qb, const KeyBlock& kb,
                                       const int32_t* columns, const RowWindow& window,
                                       float* out, int64_t ld) const {
  const char* keys = key_rows(qb, kb.first);
  const int64_t d = p_.head_dim, table_rows = p_.disentangled().rows();
  for (int64_t r = 0; r < qb.rows; ++r) {
    const int32_t* row_columns = columns + (qb.rows - 1 - r);
    // The runs of keys that read one table row: that row against them.
    for (int64_t j = 0, end; j < kb.count; j = end) {
      const int64_t column = row_columns[j];
      for (end = j + 1; end < kb.count && row_columns[end] == column;) ++end;
      const void* k = keys + size_t(j * p_.k.token) * p_.element_bytes();
      const void* rk = table_row(p_, t_.key_table, qb.head, table_rows, window.first + column);
      float* at = out + j * ld + column;
      if (p_.dtype == POSENC_BF16) {
        products_.decode_scores_bf16(static_cast<const uint16_t*>(k), p_.k.token, end - j,
                                     static_cast<const uint16_t*>(rk), d, 1, d, p_.bias_alpha,
                                     at, ld);
      } else {
        products_.decode_scores_f32(static_cast<const float*>(k), p_.k.token, end - j,
                                    static_cast<const float*>(rk), d, 1, d, p_.bias_alpha, at,
                                    ld);
      }
    }
  }
}

void AttentionBias::keys_against_table(const QueryBlock& qb, int64_t first_key, int64_t keys,
                                       int64_t first_row, int64_t rows, float* out, int64_t ld,
                                       float* wide_keys, float* wide_table_rows) const {
  const void* k = key_rows(qb, first_key);
  int64_t ldk = p_.k.token;
  if (p_.gemms_widen_bf16()) {
    if (!shapes_only_) widen_rows(elementwise_, k, ldk, keys, p_.head_dim, wide_keys);
    k = wide_keys;
    ldk = p_.head_dim;
  }
  const void* table =
      table_row(p_, t_.key_table, qb.head, p_.disentangled().rows(), first_row);
  MatmulShape s;
  s.m = keys;
  s.n = rows;
  s.k = p_.head_dim;
  s.lda = ldk;
  s.ldb = p_.head_dim;
  s.ldc = ld;
  s.transpose_b = true;
  s.ab_type = p_.gemm_dtype;
  s.alpha = p_.bias_alpha;
  matmul(s, k, gemm_rows(p_, elementwise_, table, rows, p_.head_dim, wide_table_rows), out);
}

float AttentionBias::add_mask_row(const QueryBlock& qb, const KeyBlock& kb, int64_t r,
                                  int64_t valid, const float* bias, float* row) const {
  if (p_.mask.batch == 0) {
    // The bias by the mask kernel, as a mask times 1 (the same bits as a sum).
    return bias != nullptr ? kernels_.add_mask_f32(bias, 1.0f, nullptr, row, valid)
                           : kernels_.max_of(row, valid);
  }
  const void* mask = mask_row(qb, kb, r);
  if (p_.mask.dtype == POSENC_BF16) {
    return kernels_.add_mask_bf16(static_cast<const uint16_t*>(mask), p_.mask_alpha, bias, row,
                                  valid);
  }
  return kernels_.add_mask_f32(static_cast<const float*>(mask), p_.mask_alpha, bias, row, valid);
}

const void* AttentionBias::mask_row(const QueryBlock& qb, const KeyBlock& kb, int64_t r) const {
  if (p_.mask.batch == 0) return nullptr;
  const int64_t start = p_.mask.row_start(qb.batch, qb.head, qb.first + r, p_.kv_len) + kb.first;
  return static_cast<const char*>(t_.mask) + start * int64_t(dtype_bytes(p_.mask.dtype));
}

RelativeValues::RelativeValues(const AttentionProblem& problem,
                               const posenc_attention_tensors& tensors, const KernelTable& kernels)
    : p_(problem),
      t_(tensors),
      kernels_(kernels.attention_bias),
      elementwise_(kernels.elementwise) {}

int64_t RelativeValues::max_window(const AttentionProblem& p, int64_t query_block) {
  return std::min(relative_index_of(p).readable, p.kv_len + query_block - 1);
}

int64_t RelativeValues::wide_table_rows_floats(const AttentionProblem& p, int64_t query_block) {
  return p.gemms_widen_bf16() && p.relative_values ? max_window(p, query_block) * p.value_head_dim
                                                   : 0;
}

RowWindow RelativeValues::window(const QueryBlock& qb, int64_t first_key, int64_t keys) const {
  return relative_window(p_, relative_index_of(p_, qb.query_offset),
                         qb.query_offset + qb.first, qb.rows, first_key, keys);
}

void RelativeValues::scatter(const QueryBlock& qb, int64_t r, const KeyBlock& kb,
                             const RowWindow& window, const float* p, float* weights) const {
  const auto c = window_columns(relative_index_of(p_, qb.query_offset),
                                qb.query_offset + qb.first + r, kb.first, window.first);
  kernels_.scatter_add(p, c.shift, c.lo, c.hi, weights, kb.count);
}

void RelativeValues::apply(const QueryBlock& qb, const RowWindow& window, const void* weights,
                           int64_t ld, float* out, int64_t ldo, float* wide_table_rows) const {
  MatmulShape s;
  s.m = qb.rows;
  s.n = p_.value_head_dim;
  s.k = window.count;
  s.lda = ld;
  s.ldb = p_.value_head_dim;
  s.ldc = ldo;
  s.ab_type = p_.gemm_dtype;
  s.accumulate = true;
  const void* rows = table_row(p_, t_.value_table, qb.head, relative_index_of(p_).rows,
                               window.first, p_.value_head_dim);
  matmul(s, weights,
         gemm_rows(p_, elementwise_, rows, window.count, p_.value_head_dim, wide_table_rows), out);
}

}  // namespace posenc::ops
