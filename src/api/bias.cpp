// C ABI: position biases without q, ALiBi's slopes, resizing relative tables
// (posenc/bias.h). Validation here; the work in ops/bias/.
#include <cstdint>
#include <cstring>
#include <string>

#include "api/bias_validate.hpp"
#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/bias/alibi_slopes.hpp"
#include "ops/bias/bias_rows.hpp"
#include "ops/bias/dense_bias.hpp"
#include "ops/resize/tables.hpp"
#include "ops/bias/t5_bucket.hpp"
#include "posenc/bias.h"

using namespace posenc;

namespace {

constexpr int64_t kMaxBuckets = int64_t(1) << 20;

const char* kind_name(posenc_position_bias_kind kind) {
  switch (kind) {
    case POSENC_POSITION_BIAS_TABLE_2D: return "TABLE_2D";
    case POSENC_POSITION_BIAS_TABLE_1D: return "TABLE_1D";
    case POSENC_POSITION_BIAS_T5: return "T5";
    default: return "ALIBI";
  }
}

// A field the desc's kind does not read must be 0, so that a desc meant for
// another kind is not silently taken.
void require_unused(int64_t value, const char* name, posenc_position_bias_kind kind) {
  if (value != 0) {
    invalid(std::string(name) + " must be 0 for kind " + kind_name(kind) + " (got " +
            std::to_string(value) + ")");
  }
}

// The rows of a TABLE_2D table of this window: (2Wh-1)(2Ww-1) + 3*class_token;
// errors name the window's sides as the caller does.
int64_t table_2d_rows(int64_t height, int64_t width, int class_token, const char* height_name,
                      const char* width_name, const char* what) {
  const int64_t cells = checked_bytes(
      {relative_rows(height, height_name), relative_rows(width, width_name)}, 1, what);
  return checked_sum(cells, class_token ? 3 : 0, what);
}

// The 2D window's checks; returns the table's rows.
int64_t validate_table_2d(const posenc_position_bias_desc& d, const PositionBiasNames& names) {
  require_positive(d.window_height, names.window_height);
  require_positive(d.window_width, names.window_width);
  require_flag(d.class_token, "desc->class_token");
  if (d.query_offset != 0) invalid("desc->query_offset must be 0 for kind TABLE_2D");
  const int64_t cells =
      checked_bytes({d.window_height, d.window_width}, 1, names.window_product);
  const int64_t tokens = checked_sum(cells, d.class_token, names.window_tokens);
  if (d.q_len != tokens || d.kv_len != tokens) {
    fail(POSENC_ERROR_SHAPE_MISMATCH,
         "desc->q_len and desc->kv_len must be " + std::string(names.window_product) +
             std::string(d.class_token ? " + 1" : "") + " = " + std::to_string(tokens) +
             " (got " + std::to_string(d.q_len) + " and " + std::to_string(d.kv_len) + ")");
  }
  return table_2d_rows(d.window_height, d.window_width, d.class_token, names.window_height,
                       names.window_width, names.table);
}

// T5's checks; returns the table's rows (num_buckets).
int64_t validate_t5(const posenc_position_bias_desc& d) {
  require_flag(d.bidirectional, "desc->bidirectional");
  const int64_t least = d.bidirectional ? 4 : 2;  // one exact bucket at least
  if (d.num_buckets < least || d.num_buckets > kMaxBuckets) {
    invalid("desc->num_buckets must be in [" + std::to_string(least) + ", 2^20] (got " +
            std::to_string(d.num_buckets) + ")");
  }
  require_max_distance(d.max_distance, "desc->max_distance");  // posenc_attention's bound
  const int64_t exact = ops::t5_buckets(d).max_exact();
  if (d.max_distance <= exact) {
    invalid("desc->max_distance must exceed the exact buckets, num_buckets / " +
            std::string(d.bidirectional ? "4" : "2") + " = " + std::to_string(exact) +
            " (got " + std::to_string(d.max_distance) + ")");
  }
  return d.num_buckets;
}

}  // namespace

namespace posenc {

int64_t validate_position_bias_desc(const posenc_position_bias_desc& d,
                                    const PositionBiasNames& names) {
  require_enum(d.kind, "desc->kind",
               {POSENC_POSITION_BIAS_TABLE_2D, POSENC_POSITION_BIAS_TABLE_1D,
                POSENC_POSITION_BIAS_T5, POSENC_POSITION_BIAS_ALIBI});
  require_non_negative(d.heads, "desc->heads");
  require_non_negative(d.q_len, "desc->q_len");
  require_non_negative(d.kv_len, "desc->kv_len");
  require_position_offset(d.query_offset, "desc->query_offset");
  const posenc_position_bias_kind kind = d.kind;
  if (kind != POSENC_POSITION_BIAS_TABLE_2D) {
    require_unused(d.window_height, names.window_height, kind);
    require_unused(d.window_width, names.window_width, kind);
    require_unused(d.class_token, "desc->class_token", kind);
  }
  if (kind != POSENC_POSITION_BIAS_T5) require_unused(d.num_buckets, "desc->num_buckets", kind);
  if (kind == POSENC_POSITION_BIAS_TABLE_2D || kind == POSENC_POSITION_BIAS_ALIBI) {
    require_unused(d.max_distance, "desc->max_distance", kind);
  }
  if (kind == POSENC_POSITION_BIAS_TABLE_2D || kind == POSENC_POSITION_BIAS_TABLE_1D) {
    require_unused(d.bidirectional, "desc->bidirectional", kind);
  }
  switch (kind) {
    case POSENC_POSITION_BIAS_TABLE_2D:
      return checked_bytes({validate_table_2d(d, names), d.heads}, 1, names.table);
    case POSENC_POSITION_BIAS_TABLE_1D:
      require_max_distance(d.max_distance, "desc->max_distance");
      return checked_bytes({d.heads, 2 * d.max_distance + 1}, 1, names.table);
    case POSENC_POSITION_BIAS_T5:
      return checked_bytes({validate_t5(d), d.heads}, 1, names.table);
    default:
      require_flag(d.bidirectional, "desc->bidirectional");
      return d.heads;
  }
}

}  // namespace posenc

namespace {

// in and out of a resize, of in_bytes and out_bytes: aligned (or empty) and
// not overlapping. Whether out has elements.
bool require_resize_tensors(const float* in, int64_t in_bytes, const float* out,
                            int64_t out_bytes) {
  require_tensor_or_empty(in, sizeof(float), in_bytes, "in");
  require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
  require_disjoint(out, out_bytes, "out", in, in_bytes, "in");
  return out_bytes > 0;
}

}  // namespace

extern "C" {

void posenc_position_bias_desc_init(posenc_position_bias_desc* desc,
                                    posenc_position_bias_kind kind, int64_t heads,
                                    int64_t q_len, int64_t kv_len) {
  if (desc == nullptr) return;
  *desc = posenc_position_bias_desc{};
  // Stored as bytes: a C caller may pass any int (posenc_position_bias checks it).
  std::memcpy(&desc->kind, &kind, sizeof kind);
  desc->heads = heads;
  desc->q_len = q_len;
  desc->kv_len = kv_len;
  if (enum_value(kind) == POSENC_POSITION_BIAS_T5) {
    desc->num_buckets = 32;
    desc->max_distance = 128;
    desc->bidirectional = 1;
  }
}

posenc_status posenc_position_bias(posenc_context* context,
                                   const posenc_position_bias_desc* desc, const float* table,
                                   float* out) {
  return guard("posenc_position_bias", [&] {
    require_not_null(desc, "desc");
    const posenc_position_bias_desc d = *desc;  // read throughout: out may lie over the caller's
    const int64_t table_floats = validate_position_bias_desc(
        d, {"desc->window_height", "desc->window_width", "desc->window_height * window_width",
            "desc->window_height * window_width + desc->class_token", "table"});
    const int64_t out_bytes = checked_bytes({d.heads, d.q_len, d.kv_len}, sizeof(float), "out");
    require_tensor_or_empty(out, sizeof(float), out_bytes, "out");
    if (d.kind != POSENC_POSITION_BIAS_ALIBI || table != nullptr) {
      const int64_t table_bytes = checked_bytes({table_floats}, sizeof(float), "table");
      require_tensor_or_empty(table, sizeof(float), table_bytes, "table");
      require_disjoint(out, out_bytes, "out", table, table_bytes, "table");
    }
    if (out_bytes == 0) return;
    ops::position_bias(resolve_context(context), d, table, out);
  });
}

posenc_status posenc_alibi_slopes(int64_t heads, float* slopes) {
  return guard("posenc_alibi_slopes", [&] {
    require_non_negative(heads, "heads");
    require_tensor_or_empty(slopes, sizeof(float), checked_bytes({heads}, sizeof(float), "slopes"),
                            "slopes");
    for (int64_t h = 0; h < heads; ++h) slopes[h] = ops::alibi_slope(h, heads);
  });
}

posenc_status posenc_resize_relative_table(int64_t rows, int64_t dim, const float* in,
                                           int64_t new_rows, float* out) {
  return guard("posenc_resize_relative_table", [&] {
    require_positive(rows, "rows");
    require_positive(dim, "dim");
    require_non_negative(new_rows, "new_rows");
    const int64_t in_bytes = checked_bytes({rows, dim}, sizeof(float), "in");
    const int64_t out_bytes = checked_bytes({new_rows, dim}, sizeof(float), "out");
    if (!require_resize_tensors(in, in_bytes, out, out_bytes)) return;
    ops::resize_rows_linear(rows, dim, in, new_rows, out);
  });
}

posenc_status posenc_resize_relative_bias_table_2d(int64_t heads, int64_t window_height,
                                                   int64_t window_width, int64_t new_window_height,
                                                   int64_t new_window_width, int class_token,
                                                   const float* in, float* out) {
  return guard("posenc_resize_relative_bias_table_2d", [&] {
    require_non_negative(heads, "heads");
    require_positive(window_height, "window_height");
    require_positive(window_width, "window_width");
    require_positive(new_window_height, "new_window_height");
    require_positive(new_window_width, "new_window_width");
    require_flag(class_token, "class_token");
    const int64_t in_rows = table_2d_rows(window_height, window_width, class_token, "window_height",
                                          "window_width", "in");
    const int64_t out_rows = table_2d_rows(new_window_height, new_window_width, class_token,
                                           "new_window_height", "new_window_width", "out");
    const int64_t in_bytes = checked_bytes({in_rows, heads}, sizeof(float), "in");
    const int64_t out_bytes = checked_bytes({out_rows, heads}, sizeof(float), "out");
    if (!require_resize_tensors(in, in_bytes, out, out_bytes)) return;
    const bool ct = class_token != 0;
    ops::resize_bias_table_2d(heads, ops::Window2d{window_height, window_width, ct},
                              ops::Window2d{new_window_height, new_window_width, ct}, in, out);
  });
}

}  // extern "C"
