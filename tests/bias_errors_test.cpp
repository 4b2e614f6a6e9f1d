// Bad input to the position biases and the table resizes: the documented
// status, a message naming the argument, and nothing written.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "compare.hpp"
#include "posenc/posenc.h"

extern "C" posenc_status c_position_bias_of_kind(int32_t kind, const float* table, float* out);

namespace posenc::test {
namespace {

constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
constexpr auto kNull = POSENC_ERROR_NULL_POINTER;
constexpr auto kOverflow = POSENC_ERROR_OVERFLOW;
constexpr auto kAliasing = POSENC_ERROR_ALIASING;
constexpr auto kShape = POSENC_ERROR_SHAPE_MISMATCH;

posenc_position_bias_desc desc_of(posenc_position_bias_kind kind) {
  posenc_position_bias_desc d;
  posenc_position_bias_desc_init(&d, kind, 2, 4, 4);
  if (kind == POSENC_POSITION_BIAS_TABLE_2D) d.window_height = d.window_width = 2;
  if (kind == POSENC_POSITION_BIAS_TABLE_1D) d.max_distance = 3;
  return d;
}

TEST(BiasErrors, PositionBias) {
  GuardedFloats out(64);
  const std::vector<float> table(128, 1.0f);
  const float* t = table.data();
  float* o = out.data();
  // Each change of a valid desc, and the argument the message must name.
  auto fails = [&](posenc_position_bias_kind kind, auto&& change, posenc_status status,
                   const char* argument, const float* tab = nullptr, float* dst = nullptr) {
    posenc_position_bias_desc d = desc_of(kind);
    change(d);
    return fails_with(posenc_position_bias(nullptr, &d, tab ? tab : t, dst ? dst : o), status,
                      argument);
  };
  const auto k2d = POSENC_POSITION_BIAS_TABLE_2D, k1d = POSENC_POSITION_BIAS_TABLE_1D,
             t5 = POSENC_POSITION_BIAS_T5, alibi = POSENC_POSITION_BIAS_ALIBI;
  for (auto kind : {k2d, k1d, t5, alibi}) {  // the valid descs pass
    posenc_position_bias_desc d = desc_of(kind);
    std::vector<float> scratch(32);
    EXPECT_EQ(posenc_position_bias(nullptr, &d, t, scratch.data()), POSENC_OK)
        << posenc_last_error();
  }
  EXPECT_TRUE(fails_with(posenc_position_bias(nullptr, nullptr, t, o), kNull, "desc"));
  {
    posenc_position_bias_desc d = desc_of(k1d);
    EXPECT_TRUE(fails_with(posenc_position_bias(nullptr, &d, t, nullptr), kNull, "out"));
    EXPECT_TRUE(fails_with(posenc_position_bias(nullptr, &d, nullptr, o), kNull, "table"));
    d = desc_of(t5);
    EXPECT_TRUE(fails_with(posenc_position_bias(nullptr, &d, nullptr, o), kNull, "table"));
    d = desc_of(k2d);
    EXPECT_TRUE(fails_with(posenc_position_bias(nullptr, &d, nullptr, o), kNull, "table"));
  }
  EXPECT_TRUE(fails(k1d, [](auto& d) { store_enum(d.kind, 4); }, kInvalid, "desc->kind"));
  EXPECT_TRUE(fails(k1d, [](auto& d) { store_enum(d.kind, -1); }, kInvalid, "desc->kind"));
  EXPECT_TRUE(fails(k1d, [](auto& d) { d.heads = -1; }, kInvalid, "desc->heads"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.q_len = -1; }, kInvalid, "desc->q_len"));
  EXPECT_TRUE(fails(alibi, [](auto& d) { d.kv_len = -2; }, kInvalid, "desc->kv_len"));
  EXPECT_TRUE(fails(alibi, [](auto& d) { d.query_offset = (int64_t(1) << 40) + 1; }, kInvalid,
                    "desc->query_offset"));
  EXPECT_TRUE(fails(k1d, [](auto& d) { d.query_offset = -(int64_t(1) << 40) - 1; }, kInvalid,
                    "desc->query_offset"));
  // Fields the kind does not read.
  EXPECT_TRUE(fails(alibi, [](auto& d) { d.window_height = 2; }, kInvalid, "desc->window_height"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.class_token = 1; }, kInvalid, "desc->class_token"));
  EXPECT_TRUE(fails(k1d, [](auto& d) { d.num_buckets = 32; }, kInvalid, "desc->num_buckets"));
  EXPECT_TRUE(fails(alibi, [](auto& d) { d.max_distance = 8; }, kInvalid, "desc->max_distance"));
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.bidirectional = 1; }, kInvalid, "desc->bidirectional"));
  // TABLE_2D.
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.window_width = 0; }, kInvalid, "desc->window_width"));
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.class_token = 2; }, kInvalid, "desc->class_token"));
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.query_offset = 1; }, kInvalid, "desc->query_offset"));
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.kv_len = 5; }, kShape, "desc->kv_len"));
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.class_token = 1; }, kShape, "desc->q_len"));
  EXPECT_TRUE(fails(k2d, [](auto& d) { d.window_height = d.window_width = INT64_MAX / 2; },
                    kOverflow, "window_height"));
  EXPECT_TRUE(fails(
      k2d,
      [](auto& d) {
        d.window_height = d.q_len = d.kv_len = (int64_t(1) << 62) + 1;
        d.window_width = 1;
      },
      kOverflow, "2 * desc->window_height - 1"));
  // TABLE_1D, T5, ALIBI.
  EXPECT_TRUE(fails(k1d, [](auto& d) { d.max_distance = -1; }, kInvalid, "desc->max_distance"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.num_buckets = 3; }, kInvalid, "desc->num_buckets"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.num_buckets = (1 << 20) + 1; }, kInvalid,
                    "desc->num_buckets"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.max_distance = 8; }, kInvalid, "desc->max_distance"));
  EXPECT_TRUE(fails(
      t5, [](auto& d) { d.max_distance = (int64_t(1) << 40) + 1; }, kInvalid,
      "desc->max_distance must be in [0, 2^40]"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.bidirectional = 2; }, kInvalid, "desc->bidirectional"));
  EXPECT_TRUE(fails(alibi, [](auto& d) { d.bidirectional = -1; }, kInvalid,
                    "desc->bidirectional"));
  // Sizes, alignment, aliasing.
  EXPECT_TRUE(fails(alibi, [](auto& d) { d.q_len = d.kv_len = INT64_MAX / 4; }, kOverflow, "out"));
  EXPECT_TRUE(fails(t5, [](auto& d) { d.heads = INT64_MAX / 16; }, kOverflow, "table"));
  // 7 x 1317624576693539401 is INT64_MAX: the class token's one more overflows.
  EXPECT_TRUE(fails(
      k2d,
      [](auto& d) {
        d.window_height = 7;
        d.window_width = 1317624576693539401;
        d.class_token = 1;
      },
      kOverflow, "desc->window_height * window_width + desc->class_token"));
  EXPECT_TRUE(fails(k1d, [](auto&) {}, kInvalid, "out", t, offset_bytes(o, 1)));
  EXPECT_TRUE(fails(k1d, [](auto&) {}, kInvalid, "table", offset_bytes(t, 2)));
  EXPECT_TRUE(fails(k1d, [](auto&) {}, kAliasing, "table", o + 8));
  EXPECT_TRUE(fails(alibi, [](auto&) {}, kAliasing, "table", o + 31));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(BiasErrors, KindsOutOfRangeFromC) {
  GuardedFloats out(4);
  const std::vector<float> table(64, 1.0f);
  for (int32_t kind : {-1, 4, INT32_MAX}) {
    EXPECT_TRUE(fails_with(c_position_bias_of_kind(kind, table.data(), out.data()), kInvalid,
                           "desc->kind"));
  }
  EXPECT_TRUE(out.payload_untouched());
  // T5's defaults come with the kind.
  EXPECT_EQ(c_position_bias_of_kind(POSENC_POSITION_BIAS_T5, table.data(), out.data()), POSENC_OK)
      << posenc_last_error();
}

TEST(BiasErrors, AlibiSlopes) {
  GuardedFloats out(8);
  EXPECT_TRUE(fails_with(posenc_alibi_slopes(-1, out.data()), kInvalid, "heads"));
  EXPECT_TRUE(fails_with(posenc_alibi_slopes(4, nullptr), kNull, "slopes"));
  EXPECT_TRUE(fails_with(posenc_alibi_slopes(INT64_MAX, out.data()), kOverflow, "slopes"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(BiasErrors, ResizeRelativeTable) {
  GuardedFloats out(64);
  const std::vector<float> in(64, 1.0f);
  float* o = out.data();
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(0, 2, in.data(), 4, o), kInvalid, "rows"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 0, in.data(), 4, o), kInvalid, "dim"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 2, in.data(), -4, o), kInvalid,
                         "new_rows"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 2, nullptr, 4, o), kNull, "in"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 2, in.data(), 4, nullptr), kNull, "out"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(INT64_MAX, 2, in.data(), 4, o), kOverflow,
                         "in"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 2, in.data(), INT64_MAX / 4, o),
                         kOverflow, "out"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 2, o + 7, 4, o), kAliasing, "out"));
  EXPECT_TRUE(fails_with(posenc_resize_relative_table(3, 2, in.data(), 4, offset_bytes(o, 2)),
                         kInvalid, "out"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(BiasErrors, ResizeRelativeBiasTable2d) {
  GuardedFloats out(128);
  const std::vector<float> in(128, 1.0f);
  float* o = out.data();
  auto call = [&](int64_t heads, int64_t wh, int64_t ww, int64_t nh, int64_t nw, int ct,
                  const float* src, float* dst) {
    return posenc_resize_relative_bias_table_2d(heads, wh, ww, nh, nw, ct, src, dst);
  };
  EXPECT_TRUE(fails_with(call(-1, 2, 2, 3, 3, 0, in.data(), o), kInvalid, "heads"));
  EXPECT_TRUE(fails_with(call(1, 0, 2, 3, 3, 0, in.data(), o), kInvalid, "window_height"));
  EXPECT_TRUE(fails_with(call(1, 2, -2, 3, 3, 0, in.data(), o), kInvalid, "window_width"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 0, 3, 0, in.data(), o), kInvalid, "new_window_height"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 3, 0, 0, in.data(), o), kInvalid, "new_window_width"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 3, 3, 3, in.data(), o), kInvalid, "class_token"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 3, 3, 0, nullptr, o), kNull, "in"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 3, 3, 0, in.data(), nullptr), kNull, "out"));
  // 2 * 2^62 - 1 is INT64_MAX, a row count the table's size then overflows;
  // one more overflows the rows.
  EXPECT_TRUE(fails_with(call(1, int64_t(1) << 62, 1, 3, 3, 0, in.data(), o), kOverflow, "in"));
  EXPECT_TRUE(fails_with(call(1, (int64_t(1) << 62) + 1, 1, 3, 3, 0, in.data(), o), kOverflow,
                         "2 * window_height - 1"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, (int64_t(1) << 62) + 1, 1, 0, in.data(), o), kOverflow,
                         "2 * new_window_height - 1"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, (int64_t(1) << 62) + 1, 0, in.data(), o), kOverflow,
                         "2 * new_window_width - 1"));
  EXPECT_TRUE(fails_with(call(1, int64_t(1) << 31, int64_t(1) << 31, 3, 3, 0, in.data(), o),
                         kOverflow, "in"));
  EXPECT_TRUE(fails_with(call(INT64_MAX / 4, 2, 2, 3, 3, 0, in.data(), o), kOverflow, "in"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 3, 3, 1, o + 20, o), kAliasing, "out"));
  EXPECT_TRUE(out.payload_untouched());
}

}  // namespace
}  // namespace posenc::test
