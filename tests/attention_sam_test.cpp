// SAM's and MViTv2's conventions for the decomposed 2D relative logits of
// posenc_attention (RELATIVE_2D): tables indexed by query minus key, and a
// key map of another size with SAM's coordinate scaling. The index rule
// against rows worked out by hand from segment_anything's get_rel_pos; the
// fused attention against the double reference on every ISA path, fp32 and
// bf16, both orders, with masks, lengths, grouped heads, a strided KV cache
// and the unscaled q; the errors of bad fields.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/problem.hpp"
#include "ops/relative/relative_axis.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

constexpr bool kQueryMinusKey = true, kKeyMinusQuery = false;

// SAM's get_rel_pos(q_size=14, k_size=64): q_coords = a * 64/14 (= a * 32/7),
// k_coords = c * 1, offset (64 - 1) * 1 = 63; row = long(a*32/7 - c + 63).
TEST(RelativeAxis, SamQuery14Key64ByHand) {
  const RelativeAxis axis{14, 64, kQueryMinusKey};
  EXPECT_EQ(axis.rows(), 127);
  EXPECT_EQ(axis.row(0, 0), 63);
  EXPECT_EQ(axis.row(0, 63), 0);
  EXPECT_EQ(axis.row(1, 0), 67);    // 4.571 + 63
  EXPECT_EQ(axis.row(3, 5), 71);    // 13.714 - 5 + 63
  EXPECT_EQ(axis.row(6, 27), 63);   // 27.429 - 27 + 63
  EXPECT_EQ(axis.row(7, 10), 85);   // 32 - 10 + 63
  EXPECT_EQ(axis.row(13, 0), 122);  // 59.429 + 63
  EXPECT_EQ(axis.row(13, 63), 59);
  // Key minus query: the mirrored row, 126 minus these.
  const RelativeAxis mirrored{14, 64, kKeyMinusQuery};
  EXPECT_EQ(mirrored.row(0, 0), 63);
  EXPECT_EQ(mirrored.row(1, 0), 59);
  EXPECT_EQ(mirrored.row(13, 0), 4);
  EXPECT_EQ(mirrored.row(0, 63), 126);
}

// get_rel_pos(64, 14): q_coords = a, k_coords = c * 64/14, offset
// 13 * 64/14 = 59.429: row = long(a - c*32/7 + 59.429).
TEST(RelativeAxis, SamQuery64Key14ByHand) {
  const RelativeAxis axis{64, 14, kQueryMinusKey};
  EXPECT_EQ(axis.rows(), 127);
  EXPECT_EQ(axis.row(0, 13), 0);
  EXPECT_EQ(axis.row(0, 0), 59);
  EXPECT_EQ(axis.row(10, 2), 60);    // 10 - 9.143 + 59.429
  EXPECT_EQ(axis.row(32, 7), 59);    // 32 - 32 + 59.429
  EXPECT_EQ(axis.row(63, 0), 122);
}

// get_rel_pos(8, 6) in SAM's float32: k_coords = c * fl(4/3) with
// fl(4/3) = 1.33333337, offset fl(5 * 4/3) = 6.66666651. For a = 0, c = 2:
// 0 - 2.66666675 + 6.66666651 = 3.99999976, so row 3 where the exact value
// is 4; for a = 1, c = 5: k_coords = fl(6.66666687) = 6.66666698, and
// 1 - 6.66666698 + 6.66666651 = 0.99999952: row 0, exactly 1. Elsewhere the
// exact floor, e.g. a = 0, c = 0: 6.67 -> 6; a = 7, c = 1: 12.33 -> 12.
TEST(RelativeAxis, SamFloat32RoundingByHand) {
  const RelativeAxis axis{8, 6, kQueryMinusKey};
  EXPECT_EQ(axis.rows(), 15);
  EXPECT_EQ(axis.row(0, 2), 3);
  EXPECT_EQ(axis.row(1, 5), 0);
  EXPECT_EQ(axis.row(0, 0), 6);
  EXPECT_EQ(axis.row(7, 1), 12);
  EXPECT_EQ(axis.row(0, 5), 0);  // 6.66666651 - 6.66666698 = -4.8e-7 truncates to 0
}

// Equal sizes: the plain relative coordinate of either order.
TEST(RelativeAxis, EqualSizes) {
  const RelativeAxis qmk{5, 5, kQueryMinusKey}, kmq{5, 5, kKeyMinusQuery};
  for (int64_t a = 0; a < 5; ++a) {
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(qmk.row(a, c), a - c + 4);
      EXPECT_EQ(kmq.row(a, c), c - a + 4);
    }
  }
  EXPECT_TRUE(kmq.is_window());
  EXPECT_FALSE(qmk.is_window());
}

// Integer ratios (MViTv2's pooled keys, the sizes SAM's scaling is exact
// for): the exact floor of a*max(k/q,1) - c*max(q/k,1) + (k-1)*max(q/k,1);
// every size pair up to 40: rows inside the table.
TEST(RelativeAxis, IntegerRatiosAndRange) {
  for (int64_t q = 1; q <= 40; ++q) {
    for (int64_t k = 1; k <= 40; ++k) {
      const RelativeAxis axis{q, k, kQueryMinusKey};
      for (int64_t a = 0; a < q; ++a) {
        for (int64_t c = 0; c < k; ++c) {
          const int64_t row = axis.row(a, c);
          ASSERT_GE(row, 0) << q << " " << k;
          ASSERT_LT(row, axis.rows()) << q << " " << k;
          if (k % q == 0) {
            ASSERT_EQ(row, a * (k / q) - c + k - 1);
          }
          if (q % k == 0) {
            ASSERT_EQ(row, a - c * (q / k) + (k - 1) * (q / k));
          }
        }
      }
    }
  }
}

// One RELATIVE_2D call: q from the query map, k and v from the key map
// (k and v in a KV cache of spare capacity under STRIDED), per-head tables of
// the axes' rows, an optional mask and per-sequence lengths.
AttentionTensors call_of(const posenc_attention_desc& d, Sequences s) {
  AttentionTensors x(d, std::move(s));
  const auto add = [&](Tensor t, int64_t count, uint32_t seed) {
    x.fill(t, size_t(count), seed * 977u + uint32_t(count));
  };
  const int64_t kv_heads = d.kv_heads == 0 ? d.heads : d.kv_heads;
  add(Tensor::q, reference::extent_of(d, d.q_strides, d.heads, d.q_len), 1);
  add(Tensor::k, reference::extent_of(d, d.k_strides, kv_heads, d.kv_len), 2);
  add(Tensor::v, reference::extent_of(d, d.v_strides, kv_heads, d.kv_len), 3);
  const ops::AttentionProblem p = ops::make_attention_problem(d);
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  add(Tensor::table_h, heads * p.axis_h().rows() * d.head_dim, 4);
  add(Tensor::table_w, heads * p.axis_w().rows() * d.head_dim, 5);
  x.set(Tensor::mask,
        mask_values(size_t(d.mask_batch * d.mask_heads * d.mask_q_len * d.kv_len), 6));
  return x;
}

// A RELATIVE_2D desc of a query map qh x qw against a key map kh x kw.
posenc_attention_desc map_desc(int64_t batch, int64_t heads, int64_t qh, int64_t qw, int64_t kh,
                               int64_t kw, int64_t head_dim, bool query_minus_key) {
  posenc_attention_desc d = attention_desc(batch, heads, qh * qw, kh * kw, head_dim);
  d.bias = POSENC_BIAS_RELATIVE_2D;
  d.map_height = qh;
  d.map_width = qw;
  if (kh != qh || kw != qw) {
    d.kv_map_height = kh;
    d.kv_map_width = kw;
  }
  d.relative_order = query_minus_key ? POSENC_RELATIVE_QUERY_MINUS_KEY
                                     : POSENC_RELATIVE_KEY_MINUS_QUERY;
  return d;
}

// Both orders x fp32 and bf16 against the reference; with `threads`, the
// same bits at 1 and 3 threads.
void expect_matches(posenc_isa isa, posenc_attention_desc base,
                    const std::vector<int64_t>& kv_lengths = {},
                    const std::vector<int64_t>& q_lengths = {}, bool threads = false) {
  for (bool query_minus_key : {kKeyMinusQuery, kQueryMinusKey}) {
    for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
      posenc_attention_desc d = base;
      d.relative_order = query_minus_key ? POSENC_RELATIVE_QUERY_MINUS_KEY
                                         : POSENC_RELATIVE_KEY_MINUS_QUERY;
      d.dtype = d.out_dtype = dtype;
      d.index_type = POSENC_INDEX_INT64;  // as the lengths are held
      SCOPED_TRACE(std::string(query_minus_key ? "query minus key" : "key minus query") +
                   (dtype == POSENC_BF16 ? " bf16" : " f32"));
      const AttentionTensors call = call_of(d, {kv_lengths, q_lengths, {}});
      std::vector<float> first;
      for (int n : {1, 3}) {
        if (n > 1 && !threads) break;
        posenc_context* raw = nullptr;
        ASSERT_EQ(posenc_context_create(isa, n, &raw), POSENC_OK);
        const std::unique_ptr<posenc_context, void (*)(posenc_context*)> context(
            raw, posenc_context_destroy);
        const std::vector<float> got = run(raw, call, false);
        if (!first.empty()) {
          EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0);
          continue;
        }
        first = got;
        EXPECT_TRUE(
            close_to_reference(got, reference::attention(d, call.reference()), call, 1e-5, 1e-4));
      }
    }
  }
}

class AttentionSam : public IsaTest {};

// One map, both orders: the table read forwards and backwards.
TEST_P(AttentionSam, SameMap) {
  expect_matches(GetParam(), map_desc(2, 3, 7, 9, 7, 9, 16, false));
  expect_matches(GetParam(), map_desc(1, 2, 1, 1, 1, 1, 8, false));
  expect_matches(GetParam(), map_desc(1, 2, 5, 1, 5, 1, 8, false));
}

// SAM's scaled coordinates: the q 14 x 14 against k 64 x 64, a
// non-square 3 x 5 against 6 x 10 (ratio 2), keys fewer than queries, a
// non-integer ratio with float32 rounding (8 x 8 against 6 x 6), mixed
// (rows up, columns down).
TEST_P(AttentionSam, KeyMapOfAnotherSize) {
  expect_matches(GetParam(), map_desc(1, 2, 14, 14, 64, 64, 16, false));
  expect_matches(GetParam(), map_desc(2, 3, 3, 5, 6, 10, 16, false), {}, {}, true);
  expect_matches(GetParam(), map_desc(2, 2, 6, 10, 3, 5, 8, false), {}, {}, true);
  expect_matches(GetParam(), map_desc(1, 2, 8, 8, 6, 6, 8, false));
  expect_matches(GetParam(), map_desc(1, 1, 4, 9, 7, 3, 8, false));
}

// SAM's own call (position logits from the unscaled q), per-head tables,
// grouped kv heads, k and v in a KV cache of spare capacity (STRIDED), a
// mask of -inf entries with a batch period, per-sequence lengths.
TEST_P(AttentionSam, WithTheOtherOptions) {
  posenc_attention_desc d = map_desc(4, 4, 3, 5, 6, 10, 16, false);
  d.bias_uses_scaled_q = 0;
  d.tables_per_head = 1;
  d.kv_heads = 2;
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.out_strides = dense_strides(POSENC_LAYOUT_BHTD, 4, d.q_len, 16);
  d.k_strides = d.v_strides = kv_cache_strides(2, d.kv_len + 7, 16);
  d.mask_batch = 2;
  d.mask_heads = 4;
  d.mask_q_len = d.q_len;
  expect_matches(GetParam(), d, {60, 41, 0, 7}, {15, 4, 9, 0}, true);
  // A key-padding mask row, BTHD, one shared table, keys fewer than queries.
  posenc_attention_desc e = map_desc(2, 2, 6, 10, 3, 5, 8, false);
  e.bias_uses_scaled_q = 0;
  e.layout = POSENC_LAYOUT_BTHD;
  e.mask_batch = 2;
  e.mask_heads = 1;
  e.mask_q_len = 1;
  expect_matches(GetParam(), e, {15, 9}, {});
}

// Grouped heads stacked in a task (decoding) against keys of more than one
// key block: each head's logits, made at the first key block, serve its
// later ones. 2 query heads of a 1 x 2 map stack against a 3 x 700 key map
// (4 rows: the decode kernels).
TEST_P(AttentionSam, StackedHeadsPastOneKeyBlock) {
  posenc_attention_desc d = map_desc(2, 64, 1, 2, 3, 700, 8, false);
  d.kv_heads = 32;
  d.tables_per_head = 1;
  ASSERT_EQ(ops::plan_attention(ops::make_attention_problem(d), 2, GetParam())
                .blocking.stacked_heads,
            2);
  expect_matches(GetParam(), d, {}, {}, true);
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionSam);

// Bad order and key map fields: the documented status, a message naming the
// field, out untouched.
class AttentionSamErrors : public ::testing::Test {
 protected:
  AttentionSamErrors()
      : q_(random_floats(6 * 4, 1)), kv_(random_floats(24 * 4, 2)),
        table_(random_floats(12 * 4, 3)), out_(6 * 4) {
    reset();
  }

  // A valid call: q 2 x 3 against k 4 x 6, head_dim 4 (tables of 7 and 11
  // rows: table_ holds 12).
  void reset() {
    d_ = map_desc(1, 1, 2, 3, 4, 6, 4, true);
    t_ = posenc_attention_tensors{};
    t_.q = q_.data();
    t_.k = t_.v = kv_.data();
    t_.table_h = t_.table_w = table_.data();
    t_.out = out_.data();
  }

  ::testing::AssertionResult rejects(posenc_status want, const char* argument) {
    ::testing::AssertionResult result =
        fails_with(posenc_attention(nullptr, &d_, &t_, nullptr, 0), want, argument);
    if (result && !out_.payload_untouched()) {
      result = ::testing::AssertionFailure() << "out was written";
    }
    reset();
    return result;
  }

  std::vector<float> q_, kv_, table_;
  GuardedFloats out_;
  posenc_attention_desc d_;
  posenc_attention_tensors t_;
};

TEST_F(AttentionSamErrors, Fields) {
  store_enum(d_.relative_order, 2);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_order"));
  store_enum(d_.relative_order, -1);
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_order"));
  d_.kv_map_height = 0;  // width 6 alone
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_map_height"));
  d_.kv_map_height = -4;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_map_height"));
  d_.kv_map_width = -6;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_map_width"));
  d_.kv_map_width = 5;  // 4 x 5 != kv_len 24
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->kv_map_height"));
  d_.kv_map_width = int64_t(1) << 62;  // the product would overflow
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->kv_map_height"));
  d_.kv_map_height = d_.kv_map_width = 0;  // the query map: 6 tokens, not 24
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->map_height"));
  d_.q_len = 5;  // the query map is 2 x 3
  EXPECT_TRUE(rejects(POSENC_ERROR_SHAPE_MISMATCH, "desc->map_height"));
  // Only with RELATIVE_2D.
  d_.bias = POSENC_BIAS_NONE;
  t_.table_h = t_.table_w = nullptr;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->relative_order"));
  d_.bias = POSENC_BIAS_NONE;
  d_.relative_order = POSENC_RELATIVE_KEY_MINUS_QUERY;
  t_.table_h = t_.table_w = nullptr;
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->kv_map_height"));
  const auto relative_1d = [&] {
    d_.bias = POSENC_BIAS_RELATIVE_1D;
    d_.relative_order = POSENC_RELATIVE_KEY_MINUS_QUERY;
    d_.kv_map_height = d_.kv_map_width = 0;
    d_.kv_len = 6;
    t_.table_h = t_.table_w = nullptr;
    t_.table = table_.data();
  };
  relative_1d();
  EXPECT_TRUE(rejects(POSENC_ERROR_INVALID_ARGUMENT, "desc->map_height"));  // a map unread
  relative_1d();
  d_.map_height = d_.map_width = 0;
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_OK) << posenc_last_error();
}

// The tables have 2 max(q, k) - 1 rows: an out right after table_h's 2X-1
// rows of the query map alone overlaps the 2X'-1 rows the call reads.
TEST_F(AttentionSamErrors, TableRows) {
  std::vector<float> buffer(64 * 4, 0.0f);
  t_.table_h = buffer.data();
  t_.out = buffer.data() + (2 * 2 - 1) * 4;  // past 3 rows, inside 7
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_ERROR_ALIASING,
                         "tensors->table_h"));
  t_.out = buffer.data() + (2 * 4 - 1) * 4;  // past all 7 rows
  EXPECT_EQ(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_OK) << posenc_last_error();
  t_.out = out_.data();
  t_.table_w = buffer.data() + 40 * 4;
  t_.out = buffer.data() + (40 + 2 * 3 - 1) * 4;  // past table_w's 5 rows, inside 11
  EXPECT_TRUE(fails_with(posenc_attention(nullptr, &d_, &t_, nullptr, 0), POSENC_ERROR_ALIASING,
                         "tensors->table_w"));
}

}  // namespace
}  // namespace posenc::test
