// C ABI: fused attention. Validation here; the work in
// ops/attention/attention.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "api/attention_layout.hpp"
#include "api/bias_validate.hpp"
#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/attention/attention.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/position_bias.hpp"
#include "ops/bias/attention_bias_desc.hpp"
#include "ops/relative/disentangled_index.hpp"
#include "ops/relative/relative_index.hpp"
#include "posenc/attention.h"
#include "runtime/dtype.hpp"
#include "runtime/matmul.hpp"

using namespace posenc;

namespace {

// The fields of the kinds without q: checked by posenc/bias.h's rules for
// those kinds (one home), 0 for the others. Returns the floats of the
// kind's table (ALiBi: its slopes, when given), 0 without such a bias.
int64_t validate_position_bias_fields(const posenc_attention_desc& d) {
  if (!ops::is_position_bias(d.bias)) {
    const auto unused = [](int64_t value, const char* field, const char* kinds) {
      if (value != 0) {
        invalid(std::string("desc->") + field + " must be 0 unless bias is " + kinds + " (got " +
                std::to_string(value) + ")");
      }
    };
    unused(d.class_token, "class_token", "TABLE_2D");
    if (d.bias != POSENC_BIAS_DISENTANGLED) {
      unused(d.num_buckets, "num_buckets", "T5 or DISENTANGLED");
    }
    unused(d.bidirectional, "bidirectional", "T5 or ALIBI");
    return 0;
  }
  const int64_t table_floats = validate_position_bias_desc(
      ops::position_bias_desc_of(d, d.query_offset),
      {"desc->map_height", "desc->map_width", "desc->map_height * map_width",
       "desc->map_height * map_width + desc->class_token", "tensors->table"});
  // The tables are per head by construction ([.., heads] or [heads, ..]).
  if (d.tables_per_head != 0) {
    invalid("desc->tables_per_head must be 0 with bias TABLE_2D, TABLE_1D, T5 or ALIBI");
  }
  // Shaw's value table is indexed by max_distance, which T5 and TABLE_1D
  // give another meaning.
  if (d.relative_values != 0) {
    invalid("desc->relative_values is not available with bias TABLE_2D, TABLE_1D, T5 or ALIBI");
  }
  return table_floats;
}

// DISENTANGLED's fields: its table's span S (max_distance), or DeBERTa's
// log buckets (num_buckets, max_distance), none of them skipping a row
// (least_bucketed_max_distance).
void validate_disentangled_fields(const posenc_attention_desc& d) {
  if (d.bias != POSENC_BIAS_DISENTANGLED) return;
  if (d.relative_values) {
    invalid("desc->relative_values is not available with DISENTANGLED bias");
  }
  if (d.num_buckets == 0) {
    if (d.max_distance < 1) {
      invalid("desc->max_distance must be >= 1 with DISENTANGLED bias and num_buckets 0 (the "
              "tables have 2 max_distance rows): got " + std::to_string(d.max_distance));
    }
    return;
  }
  if (d.num_buckets < 2 || d.num_buckets > (int64_t(1) << 24)) {
    invalid("desc->num_buckets must be 0 or in [2, 2^24] with DISENTANGLED bias (got " +
            std::to_string(d.num_buckets) + ")");
  }
  const int64_t least = least_bucketed_max_distance(d.num_buckets);
  if (d.max_distance < least) {
    invalid("desc->max_distance must be at least " + std::to_string(least) +
            " with DISENTANGLED bias and num_buckets " + std::to_string(d.num_buckets) +
            " (no log bucket skips a row: ln((max_distance - 1) / m) >= (m - 1) ln((m + 1) / "
            "m), m = num_buckets / 2; got " + std::to_string(d.max_distance) + ")");
  }
}

// The mask's shape: mask_batch divides batch (1 and batch included), the
// other sizes are the call's or 1. Without a mask (mask_batch 0) the other
// mask fields are not read.
void validate_mask_desc(const posenc_attention_desc& d) {
  if (d.mask_batch == 0) return;
  if (d.mask_batch < 0 || d.batch % d.mask_batch != 0) {
    invalid("desc->mask_batch must be 0 (no mask) or divide batch (" +
            std::to_string(d.batch) + "): got " + std::to_string(d.mask_batch));
  }
  if (d.mask_heads != 1 && d.mask_heads != d.heads) {
    invalid("desc->mask_heads must be 1 or heads (" + std::to_string(d.heads) + "): got " +
            std::to_string(d.mask_heads));
  }
  if (d.mask_q_len != 1 && d.mask_q_len != d.q_len) {
    invalid("desc->mask_q_len must be 1 or q_len (" + std::to_string(d.q_len) + "): got " +
            std::to_string(d.mask_q_len));
  }
  require_dtype(d.mask_dtype, "desc->mask_dtype");
}

// rows x cols == tokens (divided, not multiplied: the product could
// overflow), else a shape mismatch naming the fields.
void require_map(int64_t rows, int64_t cols, int64_t tokens, const char* names,
                 const char* tokens_name) {
  if (tokens % cols != 0 || rows != tokens / cols) {
    fail(POSENC_ERROR_SHAPE_MISMATCH, std::string(names) + " (" + std::to_string(rows) + " x " +
                                          std::to_string(cols) + ") must equal " + tokens_name +
                                          " (" + std::to_string(tokens) + ")");
  }
}

// RELATIVE_2D's maps and table order: the query map covers q_len, the key
// map (the query map's without kv_map_height and kv_map_width) kv_len. The
// order and the key map are refused with any other bias, not ignored.
void validate_map_desc(const posenc_attention_desc& d) {
  require_enum(d.relative_order, "desc->relative_order",
               {POSENC_RELATIVE_KEY_MINUS_QUERY, POSENC_RELATIVE_QUERY_MINUS_KEY});
  require_key_map(d.kv_map_height, d.kv_map_width);
  if (d.bias != POSENC_BIAS_RELATIVE_2D) {
    if (d.relative_order != POSENC_RELATIVE_KEY_MINUS_QUERY) {
      invalid("desc->relative_order applies to RELATIVE_2D bias only: must be 0 "
              "(KEY_MINUS_QUERY) with any other bias");
    }
    if (d.kv_map_height != 0) {
      invalid("desc->kv_map_height and desc->kv_map_width apply to RELATIVE_2D bias only: "
              "must be 0 with any other bias");
    }
    if (d.bias != POSENC_BIAS_TABLE_2D && (d.map_height != 0 || d.map_width != 0)) {
      invalid("desc->map_height and desc->map_width apply to RELATIVE_2D and TABLE_2D bias "
              "only: must be 0 with any other bias (got " + std::to_string(d.map_height) +
              " x " + std::to_string(d.map_width) + ")");
    }
    return;
  }
  require_positive(d.map_height, "desc->map_height");
  require_positive(d.map_width, "desc->map_width");
  require_map(d.map_height, d.map_width, d.q_len, "desc->map_height * desc->map_width",
              "q_len");
  if (d.kv_map_height == 0) {
    require_map(d.map_height, d.map_width, d.kv_len,
                "desc->map_height * desc->map_width (no kv_map_height, kv_map_width)", "kv_len");
  } else {
    require_map(d.kv_map_height, d.kv_map_width, d.kv_len,
                "desc->kv_map_height * desc->kv_map_width", "kv_len");
  }
  if (d.relative_values) {
    invalid("desc->relative_values is not available with RELATIVE_2D bias");
  }
}

// What a checked desc implies: the elements each of q, k, v and out spans,
// and the floats of a position bias's table (validate_position_bias_fields).
struct DescExtents {
  AttentionExtents tensors;
  int64_t position_table;
};

// Checks everything in the desc.
DescExtents validate_desc(const posenc_attention_desc& d) {
  require_non_negative(d.batch, "desc->batch");
  require_non_negative(d.heads, "desc->heads");
  require_non_negative(d.q_len, "desc->q_len");
  require_non_negative(d.kv_len, "desc->kv_len");
  require_positive(d.head_dim, "desc->head_dim");
  require_enum(d.layout, "desc->layout",
               {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD, POSENC_LAYOUT_STRIDED});
  require_dtype(d.dtype, "desc->dtype");
  require_dtype(d.out_dtype, "desc->out_dtype");
  require_finite(d.scale, "desc->scale");
  require_flag(d.causal, "desc->causal");
  require_non_negative(d.sliding_window, "desc->sliding_window");
  require_flag(d.sinks, "desc->sinks");
  require_flag(d.relative_query_bias, "desc->relative_query_bias");
  require_flag(d.bias_gate, "desc->bias_gate");
  require_at_least(d.softcap, 0.0, "desc->softcap", "0");
  require_flag(d.tables_per_head, "desc->tables_per_head");
  require_flag(d.bias_uses_scaled_q, "desc->bias_uses_scaled_q");
  require_flag(d.relative_values, "desc->relative_values");
  require_enum(d.index_type, "desc->index_type", {POSENC_INDEX_INT32, POSENC_INDEX_INT64});
  require_position_offset(d.query_offset, "desc->query_offset");
  require_max_distance(d.max_distance, "desc->max_distance");
  require_enum(d.bias, "desc->bias",
               {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D,
                POSENC_BIAS_RELATIVE_2D, POSENC_BIAS_TABLE_2D, POSENC_BIAS_TABLE_1D,
                POSENC_BIAS_T5, POSENC_BIAS_ALIBI, POSENC_BIAS_DISENTANGLED});
  if (d.relative_query_bias && d.bias != POSENC_BIAS_RELATIVE_1D) {
    invalid("desc->relative_query_bias shifts q in the relative logits of RELATIVE_1D bias "
            "only: must be 0 with any other bias");
  }
  if (d.bias_gate && !ops::takes_bias_gate(d.bias)) {
    invalid("desc->bias_gate gates the bias of TABLE_1D, T5 or ALIBI only: must be 0 with "
            "any other bias");
  }
  if (d.softcap > 0) {
    if (ops::bias_reads_q(d.bias)) {
      invalid("desc->softcap caps scale q.k alone: not available with bias ABSOLUTE, "
              "RELATIVE_1D, RELATIVE_2D or DISENTANGLED, whose logits q multiplies too");
    }
    const float softmax_scale = ops::softmax_scale_of(d.scale);
    const ops::SoftcapFactors f = ops::softcap_factors(softmax_scale, d.softcap);
    if (!std::isnormal(f.inner) || !std::isnormal(f.outer)) {
      invalid("desc->softcap (" + real_text(d.softcap) + ") is too far from the scale the " +
              "softmax applies (" + real_text(softmax_scale) +
              "): their ratios must be normal floats");
    }
  }
  // Refused where nothing reads it, not ignored (the kinds without q by
  // posenc/bias.h's rules, which name the kind).
  const bool checked = d.bias == POSENC_BIAS_RELATIVE_1D || d.relative_values != 0 ||
                       ops::is_position_bias(d.bias) || d.bias == POSENC_BIAS_DISENTANGLED;
  if (!checked && d.max_distance != 0) {
    invalid("desc->max_distance applies to RELATIVE_1D, relative_values, TABLE_1D, T5 and "
            "DISENTANGLED only: must be 0 with this bias (got " +
            std::to_string(d.max_distance) + ")");
  }
  validate_map_desc(d);
  validate_disentangled_fields(d);
  const int64_t position_table = validate_position_bias_fields(d);
  validate_mask_desc(d);
  // Bounds the workspace sizes (which grow with q_len + kv_len) and the 1D
  // table's rows.
  checked_bytes({d.q_len, 2}, size_t(1) << 24, "desc->q_len + desc->kv_len");
  checked_bytes({d.kv_len, 2}, size_t(1) << 24, "desc->q_len + desc->kv_len");
  // The head sizes, which bound the workspace's rows of q, keys, values and
  // accumulators (a block's rows or keys x a head size; a strided layout's
  // zero strides leave them unbounded by the tensors' extents, which are
  // checked first). 0 is head_dim for value_head_dim.
  require_non_negative(d.value_head_dim, "desc->value_head_dim");
  checked_bytes({d.value_head_dim}, size_t(1) << 24, "desc->value_head_dim");
  const AttentionExtents extents = validate_attention_layout(d);
  checked_bytes({d.head_dim}, size_t(1) << 24, "desc->head_dim");
  return DescExtents{extents, position_table};
}

// One per-sequence tensor: aligned to index_type, every value b in
// [low, high], else an error naming its first bad index. Returns the largest
// value (low when the tensor is NULL).
int64_t validate_sequence_values(const void* tensor, posenc_index_type type, int64_t batch,
                                 int64_t low, int64_t high, const char* name) {
  if (tensor == nullptr) return low;
  require_tensor(tensor, ops::index_bytes(type), name);
  // (Before reading: where no other tensor has elements, batch is bounded
  // only here.)
  checked_bytes({batch}, ops::index_bytes(type), name);
  int64_t largest = low;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t value = ops::index_value(tensor, type, b);
    if (value < low || value > high) {
      invalid(std::string(name) + "[" + std::to_string(b) + "] = " + std::to_string(value) +
              " is outside [" + std::to_string(low) + ", " + std::to_string(high) + "]");
    }
    largest = std::max(largest, value);
  }
  return largest;
}

// The per-sequence tensors of a call: their values checked, and the largest
// query offset of the call (desc->query_offset without query_offsets).
int64_t validate_sequences(const posenc_attention_desc& d, const posenc_attention_tensors& t) {
  validate_sequence_values(t.kv_lengths, d.index_type, d.batch, 0, d.kv_len,
                           "tensors->kv_lengths");
  validate_sequence_values(t.q_lengths, d.index_type, d.batch, 0, d.q_len,
                           "tensors->q_lengths");
  if (t.query_offsets == nullptr) return d.query_offset;
  if (d.query_offset != 0) {
    invalid("desc->query_offset must be 0 with tensors->query_offsets (got " +
            std::to_string(d.query_offset) + ")");
  }
  return validate_sequence_values(t.query_offsets, d.index_type, d.batch, -kMaxPositionOffset,
                                  kMaxPositionOffset, "tensors->query_offsets");
}

// Checks the tensors against the desc and returns the regions they cover,
// and the call's largest query offset (the rows of an unclipped 1D table).
Regions validate_tensors(const posenc_attention_desc& d, const posenc_attention_tensors& t,
                         const DescExtents& desc_extents, int64_t& max_query_offset) {
  const AttentionExtents& extents = desc_extents.tensors;
  const size_t es = dtype_bytes(d.dtype);
  // (The extents' bytes were checked for overflow.) q, k and v may overlap
  // each other: the three views of one packed qkv tensor do.
  Regions inputs{{t.q, extents.q * int64_t(es), "tensors->q"},
                 {t.k, extents.k * int64_t(es), "tensors->k"},
                 {t.v, extents.v * int64_t(es), "tensors->v"}};
  for (const Region& r : inputs) require_tensor_or_empty(r.pointer, es, r.bytes, r.name);
  const size_t out_es = dtype_bytes(d.out_dtype);
  require_tensor_or_empty(t.out, out_es, extents.out * int64_t(out_es), "tensors->out");
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  // (Read once batch is known to be a real tensor's size.)
  max_query_offset = validate_sequences(d, t);
  const bool relative_1d = d.bias == POSENC_BIAS_RELATIVE_1D || d.relative_values;
  // (No queries and no keys: the formula's -1 rows unclipped, taken as 0.)
  const int64_t relative_rows =
      relative_1d ? std::max<int64_t>(
                        relative_index(max_query_offset, d.q_len, d.kv_len, d.max_distance).rows, 0)
                  : 0;
  // A table of rows x columns (per head with tables_per_head), which may be
  // NULL when that is no elements.
  auto table = [&](const void* pointer, const char* name, int64_t rows, int64_t columns) {
    const int64_t bytes = checked_bytes({heads, rows, columns}, es, name);
    require_tensor_or_empty(pointer, es, bytes, name);
    inputs.push_back({pointer, bytes, name});
  };
  switch (d.bias) {
    case POSENC_BIAS_ABSOLUTE:
      table(t.table, "tensors->table", d.kv_len, d.head_dim);
      break;
    case POSENC_BIAS_RELATIVE_1D:
      table(t.table, "tensors->table", relative_rows, d.head_dim);
      break;
    case POSENC_BIAS_DISENTANGLED: {
      const int64_t rows = disentangled_index(d.num_buckets, d.max_distance).rows();
      table(t.table, "tensors->table", rows, d.head_dim);
      table(t.key_table, "tensors->key_table", rows, d.head_dim);
      break;
    }
    case POSENC_BIAS_RELATIVE_2D: {
      // 2 max(X, X') - 1 and 2 max(Y, Y') - 1 rows (the maps' sizes are
      // below 2^24: q_len and kv_len are).
      const ops::AttentionProblem p = ops::make_attention_problem(d);
      table(t.table_h, "tensors->table_h", p.axis_h().rows(), d.head_dim);
      table(t.table_w, "tensors->table_w", p.axis_w().rows(), d.head_dim);
      break;
    }
    default:
      break;
  }
  if (ops::is_position_bias(d.bias)) {
    // The table as the model stores it (ALiBi: the slopes, or NULL).
    if (d.bias != POSENC_BIAS_ALIBI || t.table != nullptr) {
      const int64_t bytes = checked_bytes({desc_extents.position_table}, es, "tensors->table");
      require_tensor_or_empty(t.table, es, bytes, "tensors->table");
      inputs.push_back({t.table, bytes, "tensors->table"});
    }
    if (d.bias == POSENC_BIAS_TABLE_2D && t.query_offsets != nullptr) {
      invalid("tensors->query_offsets must be NULL with bias TABLE_2D (a window has no offset)");
    }
  }
  const bool uses_table = d.bias == POSENC_BIAS_ABSOLUTE || d.bias == POSENC_BIAS_RELATIVE_1D ||
                          d.bias == POSENC_BIAS_DISENTANGLED ||
                          (ops::is_position_bias(d.bias) && d.bias != POSENC_BIAS_ALIBI);
  if (!uses_table && d.bias != POSENC_BIAS_ALIBI) {
    require_null(t.table, "tensors->table",
                 "unless bias is ABSOLUTE, RELATIVE_1D, DISENTANGLED, TABLE_2D, TABLE_1D, T5 or "
                 "ALIBI");
  }
  if (d.bias != POSENC_BIAS_DISENTANGLED) {
    require_null(t.key_table, "tensors->key_table", "unless bias is DISENTANGLED");
  }
  if (d.bias != POSENC_BIAS_RELATIVE_2D) {
    require_null(t.table_h, "tensors->table_h", "unless bias is RELATIVE_2D");
    require_null(t.table_w, "tensors->table_w", "unless bias is RELATIVE_2D");
  }
  if (d.mask_batch > 0) {
    const size_t mask_es = dtype_bytes(d.mask_dtype);
    const int64_t bytes = checked_bytes({d.mask_batch, d.mask_heads, d.mask_q_len, d.kv_len},
                                        mask_es, "tensors->mask");
    require_tensor_or_empty(t.mask, mask_es, bytes, "tensors->mask");
    inputs.push_back({t.mask, bytes, "tensors->mask"});
  } else {
    require_null(t.mask, "tensors->mask", "unless mask_batch > 0");
  }
  for (const Region& r : {Region{t.kv_lengths, 0, "tensors->kv_lengths"},
                          Region{t.q_lengths, 0, "tensors->q_lengths"},
                          Region{t.query_offsets, 0, "tensors->query_offsets"}}) {
    if (r.pointer == nullptr) continue;
    inputs.push_back(
        {r.pointer, checked_bytes({d.batch}, ops::index_bytes(d.index_type), r.name), r.name});
  }
  if (d.relative_values) {
    table(t.value_table, "tensors->value_table", relative_rows, ops::value_head_dim(d));
  } else {
    require_null(t.value_table, "tensors->value_table", "unless relative_values is 1");
  }
  if (d.sinks) {
    const int64_t bytes = checked_bytes({d.heads}, es, "tensors->sinks");
    require_tensor_or_empty(t.sinks, es, bytes, "tensors->sinks");
    inputs.push_back({t.sinks, bytes, "tensors->sinks"});
  } else {
    require_null(t.sinks, "tensors->sinks", "unless sinks is 1");
  }
  if (d.relative_query_bias) {
    const char* name = "tensors->relative_query_bias";
    const int64_t bytes = checked_bytes({d.heads, d.head_dim}, es, name);
    require_tensor_or_empty(t.relative_query_bias, es, bytes, name);
    inputs.push_back({t.relative_query_bias, bytes, name});
  } else {
    require_null(t.relative_query_bias, "tensors->relative_query_bias",
                 "unless relative_query_bias is 1");
  }
  if (d.bias_gate) {
    const char* name = "tensors->bias_gate";
    const int64_t bytes = checked_bytes({d.batch, d.heads, d.q_len}, es, name);
    require_tensor_or_empty(t.bias_gate, es, bytes, name);
    inputs.push_back({t.bias_gate, bytes, name});
  } else {
    require_null(t.bias_gate, "tensors->bias_gate", "unless bias_gate is 1");
  }
  return inputs;
}

// Everything but the workspace: the output's size, the inputs' regions and
// the call's largest query offset.
struct Validated {
  int64_t out_bytes;
  Regions inputs;
  int64_t max_query_offset;
};

Validated validate(const posenc_attention_desc& desc, const posenc_attention_tensors& tensors) {
  const DescExtents extents = validate_desc(desc);
  // Every size product is checked before the problem multiplies them.
  int64_t max_query_offset = 0;
  Regions inputs = validate_tensors(desc, tensors, extents, max_query_offset);
  const int64_t out_bytes = extents.tensors.out * int64_t(dtype_bytes(desc.out_dtype));
  for (const Region& r : inputs) {
    require_disjoint(tensors.out, out_bytes, "tensors->out", r.pointer, r.bytes, r.name);
  }
  return Validated{out_bytes, std::move(inputs), max_query_offset};
}

// A call without output rows or without keys, which the ops never see: it
// writes nothing, or rows that see no key (zeros).
bool is_empty(const posenc_attention_desc& d) {
  return d.batch == 0 || d.heads == 0 || d.q_len == 0 || d.kv_len == 0;
}

// Zeros in every row of out (of out_bytes > 0), and nowhere between strided
// rows; bf16's zero is 0x0000 too.
void zero_rows(const posenc_attention_desc& d, void* out, int64_t out_bytes) {
  if (d.layout != POSENC_LAYOUT_STRIDED) {
    std::memset(out, 0, size_t(out_bytes));
    return;
  }
  const int64_t es = int64_t(dtype_bytes(d.out_dtype));
  const size_t row_bytes = size_t(ops::value_head_dim(d) * es);
  const posenc_token_strides& s = d.out_strides;
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t i = 0; i < d.q_len; ++i) {
        std::memset(static_cast<char*>(out) + (b * s.batch + h * s.head + i * s.token) * es, 0,
                    row_bytes);
      }
    }
  }
}

}  // namespace

extern "C" {

void posenc_attention_desc_init(posenc_attention_desc* desc, int64_t batch, int64_t heads,
                                int64_t q_len, int64_t kv_len, int64_t head_dim) {
  if (desc == nullptr) return;
  *desc = posenc_attention_desc{};
  desc->batch = batch;
  desc->heads = heads;
  desc->q_len = q_len;
  desc->kv_len = kv_len;
  desc->head_dim = head_dim;
  desc->layout = POSENC_LAYOUT_BHTD;
  desc->dtype = POSENC_F32;
  desc->out_dtype = POSENC_F32;
  desc->scale = ops::default_scale(head_dim);
  desc->bias = POSENC_BIAS_NONE;
  desc->bias_uses_scaled_q = 1;
}

posenc_status posenc_attention_workspace_size(posenc_context* context,
                                              const posenc_attention_desc* desc, size_t* bytes) {
  return guard("posenc_attention_workspace_size", [&] {
    require_not_null(desc, "desc");
    require_not_null(bytes, "bytes");
    validate_desc(*desc);  // also the sizes of q, k, v before the problem multiplies them
    if (is_empty(*desc)) {
      *bytes = 0;
      return;
    }
    const ExecContext ctx = resolve_context(context);
    *bytes = ops::plan_attention(ops::make_attention_problem(*desc), ctx.num_threads, ctx.isa)
                 .workspace_bytes;
  });
}

posenc_status posenc_attention(posenc_context* context, const posenc_attention_desc* desc,
                               const posenc_attention_tensors* tensors, void* workspace,
                               size_t workspace_bytes) {
  return guard("posenc_attention", [&] {
    require_not_null(desc, "desc");
    require_not_null(tensors, "tensors");
    // Copies, read throughout the call: out or the workspace may lie over the caller's.
    const posenc_attention_desc d = *desc;
    const posenc_attention_tensors t = *tensors;
    const Validated v = validate(d, t);
    if (is_empty(d)) {
      if (v.out_bytes > 0) zero_rows(d, t.out, v.out_bytes);
      return;
    }
    const ExecContext ctx = resolve_context(context);
    const ops::AttentionProblem problem = ops::make_attention_problem(d, &t, v.max_query_offset);
    const PrimitiveHold hold;  // the plan's primitives serve the call
    const ops::AttentionPlan plan = ops::plan_attention(problem, ctx.num_threads, ctx.isa);
    require_workspace(workspace, workspace_bytes, plan.workspace_bytes, t.out, v.out_bytes,
                      "tensors->out", v.inputs);
    ops::attention(ctx, problem, plan, t, workspace);
  });
}

}  // extern "C"
