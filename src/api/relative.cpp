// C ABI: position logits. Validation here; the work in ops/relative/ and
// ops/absolute/absolute_logits.cpp.
#include <algorithm>
#include <cstdint>
#include <string>

#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/relative/logits_1d.hpp"
#include "ops/absolute/absolute_logits.hpp"
#include "ops/relative/logits_2d.hpp"
#include "ops/relative/relative_axis.hpp"
#include "ops/relative/skew.hpp"
#include "posenc/relative.h"

using namespace posenc;

namespace {

void require_table_heads(int64_t table_heads, int64_t heads, const char* name = "table_heads") {
  if (table_heads != 1 && table_heads != heads) {
    invalid(std::string(name) + " must be 1 (shared) or heads = " + std::to_string(heads) +
            " (per head), got " + std::to_string(table_heads));
  }
}

void require_sizes(int64_t batch, int64_t heads, int64_t dim) {
  require_non_negative(batch, "batch");
  require_non_negative(heads, "heads");
  require_positive(dim, "dim");
}

// The sizes of the 1D logits calls (absolute and relative): q [batch, heads,
// queries, dim], table [table_heads, rows, dim], out [batch, heads, queries, keys].
struct Logits1d {
  int64_t batch, heads, queries, keys, dim, table_heads;
};

void require_logits_sizes(const Logits1d& s) {
  require_sizes(s.batch, s.heads, s.dim);
  require_non_negative(s.queries, "queries");
  require_non_negative(s.keys, "keys");
  require_table_heads(s.table_heads, s.heads);
}

// The tensors are set (or empty), their sizes fit, and out overlaps neither
// input. Returns out's bytes.
int64_t require_logits_tensors(const Logits1d& s, const float* q, const float* table,
                               int64_t table_rows, const float* out) {
  const int64_t q_bytes = checked_bytes({s.batch, s.heads, s.queries, s.dim}, sizeof(float), "q");
  const int64_t table_bytes =
      checked_bytes({s.table_heads, table_rows, s.dim}, sizeof(float), "table");
  const int64_t out_bytes =
      checked_bytes({s.batch, s.heads, s.queries, s.keys}, sizeof(float), "out");
  require_tensor_or_empty(q, sizeof(float), q_bytes, "q");
  require_tensor_or_empty(table, sizeof(float), table_bytes, "table");
  require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
  require_disjoint(out, out_bytes, "out", q, q_bytes, "q");
  require_disjoint(out, out_bytes, "out", table, table_bytes, "table");
  return out_bytes;
}

ops::Relative1dGeometry relative_1d_geometry(int64_t queries, int64_t keys, int64_t dim,
                                             const posenc_relative_options* options) {
  const posenc_relative_options o = options ? *options : posenc_relative_options{0, 0, 0};
  require_non_negative(o.query_offset, "options->query_offset");
  require_non_negative(o.clip, "options->clip");
  require_flag(o.causal, "options->causal");
  // Every position and distance must fit: p + queries + keys.
  checked_sum(checked_sum(o.query_offset, queries, "options->query_offset + queries"), keys,
              "options->query_offset + queries + keys");
  if (o.clip > (INT64_MAX - 1) / 2) fail(POSENC_ERROR_OVERFLOW, "2 * options->clip + 1 overflows");
  return ops::Relative1dGeometry{queries, keys, dim, o.query_offset, o.clip, o.causal == 1};
}

// A 2D problem whose sizes are checked: q [batch, heads, h.q * w.q, dim],
// the tables [table_heads, h.rows() or w.rows(), dim].
struct Problem2d {
  int64_t batch, heads, dim, table_heads;
  RelativeAxis h, w;  // along the height and the width
};

// The bytes of q and of the two tables.
struct Bytes2d {
  int64_t q, row_table, column_table;
};

// The axis's table rows, 2 max(q, k) - 1, fit; `sizes` names max(q, k).
RelativeAxis checked_axis(int64_t q, int64_t k, bool query_minus_key, const char* sizes) {
  relative_rows(std::max(q, k), sizes);
  return RelativeAxis{q, k, query_minus_key};
}

// The inputs are set (or empty) and their sizes fit; `tokens_name` names
// h.q * w.q.
Bytes2d require_inputs_2d(const Problem2d& p, const float* q, const float* row_table,
                          const float* column_table, const char* tokens_name) {
  const int64_t tokens = checked_bytes({p.h.q, p.w.q}, 1, tokens_name);
  const Bytes2d in{
      checked_bytes({p.batch, p.heads, tokens, p.dim}, sizeof(float), "q"),
      checked_bytes({p.table_heads, p.h.rows(), p.dim}, sizeof(float), "row_table"),
      checked_bytes({p.table_heads, p.w.rows(), p.dim}, sizeof(float), "column_table")};
  require_tensor_or_empty(q, sizeof(float), in.q, "q");
  require_tensor_or_empty(row_table, sizeof(float), in.row_table, "row_table");
  require_tensor_or_empty(column_table, sizeof(float), in.column_table, "column_table");
  return in;
}

// The 2D problem of one map (key minus query), as its functions name it.
Problem2d validate_2d(int64_t batch, int64_t heads, int64_t height, int64_t width, int64_t dim,
                      int64_t table_heads) {
  require_sizes(batch, heads, dim);
  require_positive(height, "height");
  require_positive(width, "width");
  require_table_heads(table_heads, heads);
  return Problem2d{batch, heads, dim, table_heads, checked_axis(height, height, false, "height"),
                   checked_axis(width, width, false, "width")};
}

// posenc_relative_logits_2d_maps's desc, field by field.
Problem2d validate_2d_desc(const posenc_relative_2d_desc& d) {
  require_non_negative(d.batch, "desc->batch");
  require_non_negative(d.heads, "desc->heads");
  require_positive(d.map_height, "desc->map_height");
  require_positive(d.map_width, "desc->map_width");
  require_key_map(d.kv_map_height, d.kv_map_width);
  require_positive(d.dim, "desc->dim");
  require_table_heads(d.table_heads, d.heads, "desc->table_heads");
  require_enum(d.relative_order, "desc->relative_order",
               {POSENC_RELATIVE_KEY_MINUS_QUERY, POSENC_RELATIVE_QUERY_MINUS_KEY});
  const bool query_minus_key = d.relative_order == POSENC_RELATIVE_QUERY_MINUS_KEY;
  const bool key_map = d.kv_map_height != 0;
  return Problem2d{
      d.batch, d.heads, d.dim, d.table_heads,
      checked_axis(d.map_height, key_map ? d.kv_map_height : d.map_height, query_minus_key,
                   "max(desc->map_height, desc->kv_map_height)"),
      checked_axis(d.map_width, key_map ? d.kv_map_width : d.map_width, query_minus_key,
                   "max(desc->map_width, desc->kv_map_width)")};
}

// out must not overlap q or either table.
void require_disjoint_2d(const float* out, int64_t out_bytes, const char* out_name,
                         const float* q, const float* row_table, const float* column_table,
                         const Bytes2d& in) {
  require_disjoint(out, out_bytes, out_name, q, in.q, "q");
  require_disjoint(out, out_bytes, out_name, row_table, in.row_table, "row_table");
  require_disjoint(out, out_bytes, out_name, column_table, in.column_table, "column_table");
}

// rel_h [.., tokens, h.k] and rel_w [.., tokens, w.k] are set (or empty), fit
// and overlap nothing. Whether they have elements (batch * heads > 0: the
// map sides are >= 1).
bool require_decomposed_outputs(const Problem2d& p, const Bytes2d& in, const float* q,
                                const float* row_table, const float* column_table,
                                const float* rel_h, const float* rel_w) {
  const int64_t tokens = p.h.q * p.w.q;
  const int64_t h_bytes = checked_bytes({p.batch, p.heads, tokens, p.h.k}, sizeof(float), "rel_h");
  const int64_t w_bytes = checked_bytes({p.batch, p.heads, tokens, p.w.k}, sizeof(float), "rel_w");
  require_tensor_or_empty(rel_h, sizeof(float), h_bytes, "rel_h");
  require_tensor_or_empty(rel_w, sizeof(float), w_bytes, "rel_w");
  require_disjoint_2d(rel_h, h_bytes, "rel_h", q, row_table, column_table, in);
  require_disjoint_2d(rel_w, w_bytes, "rel_w", q, row_table, column_table, in);
  require_disjoint(rel_w, w_bytes, "rel_w", rel_h, h_bytes, "rel_h");
  return h_bytes > 0;
}

}  // namespace

extern "C" {

posenc_status posenc_absolute_logits(posenc_context* context, int64_t batch, int64_t heads,
                                     int64_t queries, int64_t keys, int64_t dim,
                                     const float* q, const float* table, int64_t table_heads,
                                     float* out) {
  return guard("posenc_absolute_logits", [&] {
    const Logits1d sizes{batch, heads, queries, keys, dim, table_heads};
    require_logits_sizes(sizes);
    if (require_logits_tensors(sizes, q, table, keys, out) == 0) return;
    ops::absolute_logits(resolve_context(context), batch, heads, queries, keys, dim, q, table,
                         table_heads, out);
  });
}

posenc_status posenc_rel_to_abs(posenc_context* context, int64_t batch, int64_t heads,
                                int64_t length, const float* in, float* out) {
  return guard("posenc_rel_to_abs", [&] {
    require_non_negative(batch, "batch");
    require_non_negative(heads, "heads");
    require_non_negative(length, "length");
    // in's last axis, 2 length - 1, is taken as 0 for length 0: no rows.
    const int64_t width = length == 0 ? 0 : relative_rows(length, "length");
    const int64_t in_bytes = checked_bytes({batch, heads, length, width}, sizeof(float), "in");
    const int64_t out_bytes = checked_bytes({batch, heads, length, length}, sizeof(float), "out");
    require_tensor_or_empty(in, sizeof(float), in_bytes, "in");
    require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
    require_disjoint(out, out_bytes, "out", in, in_bytes, "in");
    if (out_bytes == 0) return;
    ops::rel_to_abs(resolve_context(context), batch, heads, length, in, out);
  });
}

posenc_status posenc_relative_logits_1d(posenc_context* context, int64_t batch, int64_t heads,
                                        int64_t queries, int64_t keys, int64_t dim,
                                        const float* q, const float* table, int64_t table_heads,
                                        const posenc_relative_options* options, float* out) {
  return guard("posenc_relative_logits_1d", [&] {
    const Logits1d sizes{batch, heads, queries, keys, dim, table_heads};
    require_logits_sizes(sizes);
    const ops::Relative1dGeometry geometry = relative_1d_geometry(queries, keys, dim, options);
    // Unclipped with query_offset = queries = keys = 0, the table's
    // query_offset + queries + keys - 1 rows are none.
    const int64_t table_rows = std::max<int64_t>(ops::relative_1d_table_rows(geometry), 0);
    if (require_logits_tensors(sizes, q, table, table_rows, out) == 0) return;
    ops::relative_logits_1d(resolve_context(context), batch, heads, geometry, q, table,
                            table_heads, out);
  });
}

posenc_status posenc_relative_logits_2d_decomposed(
    posenc_context* context, int64_t batch, int64_t heads, int64_t height, int64_t width,
    int64_t dim, const float* q, const float* row_table, const float* column_table,
    int64_t table_heads, float* rel_h, float* rel_w) {
  return guard("posenc_relative_logits_2d_decomposed", [&] {
    const Problem2d p = validate_2d(batch, heads, height, width, dim, table_heads);
    const Bytes2d in = require_inputs_2d(p, q, row_table, column_table, "height * width");
    if (!require_decomposed_outputs(p, in, q, row_table, column_table, rel_h, rel_w)) return;
    ops::relative_logits_2d_decomposed(resolve_context(context), batch, heads, height, width,
                                       dim, q, row_table, column_table, table_heads, rel_h,
                                       rel_w);
  });
}

posenc_status posenc_relative_logits_2d(posenc_context* context, int64_t batch, int64_t heads,
                                        int64_t height, int64_t width, int64_t dim,
                                        const float* q, const float* row_table,
                                        const float* column_table, int64_t table_heads,
                                        float* out) {
  return guard("posenc_relative_logits_2d", [&] {
    const Problem2d p = validate_2d(batch, heads, height, width, dim, table_heads);
    const Bytes2d in = require_inputs_2d(p, q, row_table, column_table, "height * width");
    const int64_t tokens = height * width;
    const int64_t out_bytes =
        checked_bytes({batch, heads, tokens, tokens}, sizeof(float), "out");
    require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
    // The decomposed logits the op keeps meanwhile: up to twice out's size
    // where a side is 1.
    checked_bytes({batch, heads, tokens, height + width}, sizeof(float),
                  "batch * heads * height * width * (height + width), the decomposed logits");
    require_disjoint_2d(out, out_bytes, "out", q, row_table, column_table, in);
    if (out_bytes == 0) return;
    ops::relative_logits_2d(resolve_context(context), batch, heads, height, width, dim, q,
                            row_table, column_table, table_heads, out);
  });
}

void posenc_relative_2d_desc_init(posenc_relative_2d_desc* desc, int64_t batch, int64_t heads,
                                  int64_t map_height, int64_t map_width, int64_t dim) {
  if (desc == nullptr) return;
  *desc = posenc_relative_2d_desc{};
  desc->batch = batch;
  desc->heads = heads;
  desc->map_height = map_height;
  desc->map_width = map_width;
  desc->dim = dim;
  desc->table_heads = 1;
  desc->relative_order = POSENC_RELATIVE_KEY_MINUS_QUERY;
}

posenc_status posenc_relative_logits_2d_maps(posenc_context* context,
                                             const posenc_relative_2d_desc* desc, const float* q,
                                             const float* row_table, const float* column_table,
                                             float* rel_h, float* rel_w) {
  return guard("posenc_relative_logits_2d_maps", [&] {
    require_not_null(desc, "desc");
    const Problem2d p = validate_2d_desc(*desc);
    const Bytes2d in =
        require_inputs_2d(p, q, row_table, column_table, "desc->map_height * desc->map_width");
    if (!require_decomposed_outputs(p, in, q, row_table, column_table, rel_h, rel_w)) return;
    ops::relative_logits_2d_decomposed(resolve_context(context), p.batch, p.heads, p.h, p.w,
                                       p.dim, q, row_table, column_table, p.table_heads, rel_h,
                                       rel_w);
  });
}

}  // extern "C"
