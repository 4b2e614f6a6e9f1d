// Bad input to the position-logit functions: the documented status, a
// message naming the argument, and nothing written.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "compare.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
constexpr auto kNull = POSENC_ERROR_NULL_POINTER;
constexpr auto kOverflow = POSENC_ERROR_OVERFLOW;
constexpr auto kAliasing = POSENC_ERROR_ALIASING;

TEST(RelativeErrors, AbsoluteLogits) {
  GuardedFloats out(64);
  const std::vector<float> q(64, 1.0f), t(64, 1.0f);
  float* o = out.data();
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, -1, 1, 2, 2, 2, q.data(), t.data(), 1, o),
                         kInvalid, "batch"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, -2, 2, 2, 2, q.data(), t.data(), 1, o),
                         kInvalid, "heads"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, -1, 2, 2, q.data(), t.data(), 1, o),
                         kInvalid, "queries"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, -1, 2, q.data(), t.data(), 1, o),
                         kInvalid, "keys"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 0, q.data(), t.data(), 1, o),
                         kInvalid, "dim"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 3, 2, 2, 2, q.data(), t.data(), 2, o),
                         kInvalid, "table_heads"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 3, 2, 2, 2, q.data(), t.data(), 0, o),
                         kInvalid, "table_heads"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, nullptr, t.data(), 1, o),
                         kNull, "q"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, q.data(), nullptr, 1, o),
                         kNull, "table"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, q.data(), t.data(), 1,
                                                nullptr),
                         kNull, "out"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, INT64_MAX / 2, 1, 4, 4, 2, q.data(),
                                                t.data(), 1, o),
                         kOverflow, "q"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, o + 2, t.data(), 1, o),
                         kAliasing, "q"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, q.data(), o, 1, o),
                         kAliasing, "table"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(RelativeErrors, RelToAbs) {
  GuardedFloats out(64);
  const std::vector<float> in(64, 1.0f);
  float* o = out.data();
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, -1, in.data(), o), kInvalid, "length"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, -1, 1, 2, in.data(), o), kInvalid, "batch"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, 2, nullptr, o), kNull, "in"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, 2, in.data(), nullptr), kNull, "out"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, INT64_MAX, in.data(), o),
                         kOverflow, "length"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, int64_t(1) << 31, in.data(), o),
                         kOverflow, "in"));
  // 2 * 2^62 - 1 rows fit in int64 though 2 * 2^62 does not (the fuzzer's UBSan find).
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, int64_t(1) << 62, in.data(), o),
                         kOverflow, "in"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, 3, o + 4, o), kAliasing, "out"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(RelativeErrors, RelativeLogits1d) {
  GuardedFloats out(64);
  const std::vector<float> q(64, 1.0f), t(64, 1.0f);
  float* o = out.data();
  auto call = [&](int64_t heads, int64_t queries, int64_t keys, int64_t table_heads,
                  const posenc_relative_options* options, const float* table, float* dst) {
    return posenc_relative_logits_1d(nullptr, 1, heads, queries, keys, 2, q.data(), table,
                                     table_heads, options, dst);
  };
  const posenc_relative_options negative_offset{-1, 0, 0}, negative_clip{0, -2, 0},
      bad_causal{0, 0, 2}, huge_offset{INT64_MAX - 3, 0, 0}, huge_clip{0, INT64_MAX / 2 + 1, 0};
  EXPECT_TRUE(fails_with(call(1, -1, 2, 1, nullptr, t.data(), o), kInvalid, "queries"));
  EXPECT_TRUE(fails_with(call(1, 2, -1, 1, nullptr, t.data(), o), kInvalid, "keys"));
  EXPECT_TRUE(fails_with(call(2, 2, 2, 3, nullptr, t.data(), o), kInvalid, "table_heads"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, &negative_offset, t.data(), o), kInvalid,
                         "options->query_offset"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, &negative_clip, t.data(), o), kInvalid,
                         "options->clip"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, &bad_causal, t.data(), o), kInvalid,
                         "options->causal"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, &huge_offset, t.data(), o), kOverflow,
                         "options->query_offset"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, &huge_clip, t.data(), o), kOverflow, "options->clip"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, nullptr, nullptr, o), kNull, "table"));
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, nullptr, t.data(), nullptr), kNull, "out"));
  // The table of 2 queries and 2 keys at offset 3 has 3 + 2 + 2 - 1 = 6 rows.
  const posenc_relative_options offset3{3, 0, 0};
  EXPECT_TRUE(fails_with(call(1, 2, 2, 1, &offset3, o + 2, o), kAliasing, "table"));
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_EQ(call(1, 2, 2, 1, &offset3, o + 4, o + 4 + 6 * 2), POSENC_OK);
}

TEST(RelativeErrors, RelativeLogits2d) {
  GuardedFloats out(256);
  const std::vector<float> q(64, 1.0f), t(64, 1.0f);
  float* o = out.data();
  auto full = [&](int64_t height, int64_t width, int64_t table_heads, const float* qq,
                  const float* rh, const float* rw, float* dst) {
    return posenc_relative_logits_2d(nullptr, 1, 2, height, width, 2, qq, rh, rw, table_heads,
                                     dst);
  };
  auto split = [&](const float* rh, float* rel_h, float* rel_w) {
    return posenc_relative_logits_2d_decomposed(nullptr, 1, 1, 2, 3, 2, q.data(), rh, t.data(),
                                                1, rel_h, rel_w);
  };
  EXPECT_TRUE(fails_with(full(0, 2, 1, q.data(), t.data(), t.data(), o), kInvalid, "height"));
  EXPECT_TRUE(fails_with(full(2, 0, 1, q.data(), t.data(), t.data(), o), kInvalid, "width"));
  EXPECT_TRUE(fails_with(full(2, 2, 3, q.data(), t.data(), t.data(), o), kInvalid,
                         "table_heads"));
  EXPECT_TRUE(fails_with(full(2, 2, 1, nullptr, t.data(), t.data(), o), kNull, "q"));
  EXPECT_TRUE(fails_with(full(2, 2, 1, q.data(), nullptr, t.data(), o), kNull, "row_table"));
  EXPECT_TRUE(fails_with(full(2, 2, 1, q.data(), t.data(), nullptr, o), kNull, "column_table"));
  EXPECT_TRUE(fails_with(full(2, 2, 1, q.data(), t.data(), t.data(), nullptr), kNull, "out"));
  EXPECT_TRUE(fails_with(full(INT64_MAX / 4, 8, 1, q.data(), t.data(), t.data(), o), kOverflow,
                         "height * width"));
  EXPECT_TRUE(fails_with(full(int64_t(1) << 20, int64_t(1) << 20, 1, q.data(), t.data(),
                              t.data(), o),
                         kOverflow, "out"));
  // A 1 x 1 map: q and out of 2^62 bytes fit, the decomposed logits' 2^63 not.
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d(nullptr, int64_t(1) << 60, 1, 1, 1, 1, q.data(),
                                                   t.data(), t.data(), 1, o),
                         kOverflow, "the decomposed logits"));
  EXPECT_TRUE(fails_with(full(2, 2, 1, o + 20, t.data(), t.data(), o), kAliasing, "q"));
  EXPECT_TRUE(fails_with(full(2, 2, 2, q.data(), o + 30, t.data(), o), kAliasing, "row_table"));
  EXPECT_TRUE(fails_with(full(2, 2, 1, q.data(), t.data(), o + 120, o + 100), kAliasing,
                         "column_table"));
  // rel_h is [6, 2], rel_w [6, 3].
  EXPECT_TRUE(fails_with(split(t.data(), nullptr, o), kNull, "rel_h"));
  EXPECT_TRUE(fails_with(split(t.data(), o, nullptr), kNull, "rel_w"));
  EXPECT_TRUE(fails_with(split(t.data(), o, o + 11), kAliasing, "rel_w"));
  EXPECT_TRUE(fails_with(split(o + 10, o, o + 100), kAliasing, "row_table"));
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_EQ(split(t.data(), o, o + 12), POSENC_OK);
}

// posenc_relative_logits_2d_maps: each desc field by name. The valid desc
// is a 2x3 query map against a 4x6 key map: q [1, 2, 6, 2], rh [7, 2],
// rw [11, 2], rel_h [1, 2, 6, 4] (48 floats), rel_w [1, 2, 6, 6] (72).
TEST(RelativeErrors, RelativeLogits2dMaps) {
  GuardedFloats out(256);
  const std::vector<float> q(64, 1.0f), t(64, 1.0f);
  float* o = out.data();
  posenc_relative_2d_desc good;
  posenc_relative_2d_desc_init(&good, 1, 2, 2, 3, 2);
  good.kv_map_height = 4;
  good.kv_map_width = 6;
  good.relative_order = POSENC_RELATIVE_QUERY_MINUS_KEY;
  auto call = [&](const posenc_relative_2d_desc& d, const float* qq = nullptr,
                  const float* rh = nullptr, float* rel_h = nullptr, float* rel_w = nullptr) {
    return posenc_relative_logits_2d_maps(nullptr, &d, qq ? qq : q.data(), rh ? rh : t.data(),
                                          t.data(), rel_h ? rel_h : o, rel_w ? rel_w : o + 48);
  };
  auto with = [&](auto change) {
    posenc_relative_2d_desc d = good;
    change(d);
    return d;
  };
  using D = posenc_relative_2d_desc;
  posenc_relative_2d_desc_init(nullptr, 1, 2, 2, 3, 2);  // does nothing
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, nullptr, q.data(), t.data(),
                                                        t.data(), o, o + 48),
                         kNull, "desc"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.batch = -1; })), kInvalid, "desc->batch"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.heads = -1; })), kInvalid, "desc->heads"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.map_height = 0; })), kInvalid,
                         "desc->map_height"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.map_width = 0; })), kInvalid,
                         "desc->map_width"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_height = -4; })), kInvalid,
                         "desc->kv_map_height"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_width = -6; })), kInvalid,
                         "desc->kv_map_width"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_width = 0; })), kInvalid,
                         "desc->kv_map_width"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_height = 0; })), kInvalid,
                         "desc->kv_map_height"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.dim = 0; })), kInvalid, "desc->dim"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.table_heads = 3; })), kInvalid,
                         "desc->table_heads"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.table_heads = 0; })), kInvalid,
                         "desc->table_heads"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { store_enum(d.relative_order, 2); })), kInvalid,
                         "desc->relative_order"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { store_enum(d.relative_order, -1); })), kInvalid,
                         "desc->relative_order"));
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_height = (int64_t(1) << 62) + 1; })),
                         kOverflow, "desc->kv_map_height"));
  // 2^62: 2^63 - 1 table rows fit, their bytes do not.
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_height = int64_t(1) << 62; })),
                         kOverflow, "row_table"));
  EXPECT_TRUE(fails_with(call(with([](D& d) {
                           d.map_height = 3;
                           d.map_width = INT64_MAX / 2;
                         })),
                         kOverflow, "desc->map_height * desc->map_width"));
  // rel_w [1, 2, 6, 2^58] overflows; the column table, 2^59 - 1 rows of 2, does not.
  EXPECT_TRUE(fails_with(call(with([](D& d) { d.kv_map_width = int64_t(1) << 58; })), kOverflow,
                         "rel_w"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &good, nullptr, t.data(),
                                                        t.data(), o, o + 48),
                         kNull, "q"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &good, q.data(), nullptr,
                                                        t.data(), o, o + 48),
                         kNull, "row_table"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &good, q.data(), t.data(),
                                                        nullptr, o, o + 48),
                         kNull, "column_table"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &good, q.data(), t.data(),
                                                        t.data(), nullptr, o + 48),
                         kNull, "rel_h"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &good, q.data(), t.data(),
                                                        t.data(), o, nullptr),
                         kNull, "rel_w"));
  // rel_h spans 48 floats of 4 keys per query (the key map's height), not 2.
  EXPECT_TRUE(fails_with(call(good, nullptr, nullptr, o, o + 47), kAliasing, "rel_w"));
  EXPECT_TRUE(fails_with(call(good, o + 100, nullptr, o, o + 48), kAliasing, "q"));
  // The row table has 2 max(2, 4) - 1 = 7 rows: 14 floats from o + 40 reach rel_h.
  EXPECT_TRUE(fails_with(call(good, nullptr, o + 40 - 13, o + 40, o + 100), kAliasing,
                         "row_table"));
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_EQ(call(good, nullptr, o + 26, o + 40, o + 100), POSENC_OK) << posenc_last_error();
  EXPECT_EQ(call(good), POSENC_OK) << posenc_last_error();
}

// Tensors must be aligned to their floats (core.h): an odd pointer is
// refused by name and nothing is written.
TEST(RelativeErrors, MisalignedTensors) {
  GuardedFloats out(256);
  const std::vector<float> q(64, 1.0f), t(64, 1.0f);
  float* o = out.data();
  const float* odd_q = offset_bytes(q.data(), 1);
  const float* odd_t = offset_bytes(t.data(), 2);
  float* odd_o = offset_bytes(o, 3);
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, odd_q, t.data(), 1, o),
                         kInvalid, "q"));
  EXPECT_TRUE(fails_with(posenc_absolute_logits(nullptr, 1, 1, 2, 2, 2, q.data(), odd_t, 1, o),
                         kInvalid, "table"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, 2, odd_q, o), kInvalid, "in"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 1, 1, 2, q.data(), odd_o), kInvalid, "out"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_1d(nullptr, 1, 1, 2, 2, 2, q.data(), odd_t, 1,
                                                   nullptr, o),
                         kInvalid, "table"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_1d(nullptr, 1, 1, 2, 2, 2, q.data(), t.data(), 1,
                                                   nullptr, odd_o),
                         kInvalid, "out"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d(nullptr, 1, 1, 2, 2, 2, q.data(), t.data(),
                                                   odd_t, 1, o),
                         kInvalid, "column_table"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_decomposed(nullptr, 1, 1, 2, 2, 2, q.data(),
                                                              t.data(), t.data(), 1, o, odd_o + 64),
                         kInvalid, "rel_w"));
  EXPECT_TRUE(out.payload_untouched());
}

}  // namespace
}  // namespace posenc::test
