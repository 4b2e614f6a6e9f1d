// posenc_relative_logits_2d_maps on every ISA path: the table rows of SAM's
// get_rel_pos worked out by hand (a query map against a key map of another
// size, both orders), the double reference on shapes with 1, odd, prime and
// large sizes, shared and per-head tables, and bit for bit
// posenc_relative_logits_2d_decomposed with the default desc (made in C
// too).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/relative.hpp"

extern "C" posenc_status c_relative_2d_maps_with_defaults(
    int64_t batch, int64_t heads, int64_t height, int64_t width, int64_t dim, const float* q,
    const float* row_table, const float* column_table, float* rel_h, float* rel_w);

namespace posenc::test {
namespace {

namespace ref = posenc::reference;

double dot_atol(int64_t dim) { return 1e-6 + 4e-7 * double(dim); }
constexpr double kRtol = 1e-5;

// A desc of a query map X x Y against a key map KX x KY.
posenc_relative_2d_desc maps_desc(int64_t batch, int64_t heads, int64_t X, int64_t Y,
                                  int64_t KX, int64_t KY, int64_t dim, int64_t table_heads,
                                  posenc_relative_order order) {
  posenc_relative_2d_desc d;
  posenc_relative_2d_desc_init(&d, batch, heads, X, Y, dim);
  d.kv_map_height = KX;
  d.kv_map_width = KY;
  d.table_heads = table_heads;
  d.relative_order = order;
  return d;
}

// Table row r of head h holds (100 h + r, 7) and q is (b + 1, 0): every
// logit is (b + 1) * (100 h + r), exactly, which names the row it read.
struct RowProbe {
  int64_t batch = 2, heads = 2, dim = 2;
  std::vector<float> rel_h, rel_w;

  RowProbe(posenc_context* context, int64_t X, int64_t Y, int64_t KX, int64_t KY,
           int64_t rows_h, int64_t rows_w, posenc_relative_order order) {
    const int64_t N = X * Y;
    std::vector<float> q(size_t(batch * heads * N * dim), 0.0f);
    for (int64_t n = 0; n < batch * heads * N; ++n) q[size_t(n * dim)] = float(n / (heads * N) + 1);
    auto table = [&](int64_t rows) {
      std::vector<float> t(size_t(heads * rows * dim));
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t r = 0; r < rows; ++r) {
          t[size_t((h * rows + r) * dim)] = float(100 * h + r);
          t[size_t((h * rows + r) * dim + 1)] = 7.0f;
        }
      }
      return t;
    };
    const std::vector<float> rh = table(rows_h), rw = table(rows_w);
    rel_h.resize(size_t(batch * heads * N * KX));
    rel_w.resize(size_t(batch * heads * N * KY));
    const posenc_relative_2d_desc d = maps_desc(batch, heads, X, Y, KX, KY, dim, heads, order);
    EXPECT_EQ(posenc_relative_logits_2d_maps(context, &d, q.data(), rh.data(), rw.data(),
                                             rel_h.data(), rel_w.data()),
              POSENC_OK)
        << posenc_last_error();
  }
};

// q map 2x3 against k map 4x6 (SAM's global attention with a smaller query
// map). get_rel_pos(2, 4): q_coords = a * max(4/2, 1) = 2a, k_coords =
// c * max(2/4, 1) = c, offset (4-1) * 1 = 3: row = 2a - c + 3 of 7 rows.
// get_rel_pos(3, 6): row = 2a - c + 5 of 11 rows.
const int64_t kRowsH2x4[2][4] = {{3, 2, 1, 0}, {5, 4, 3, 2}};
const int64_t kRowsW3x6[3][6] = {{5, 4, 3, 2, 1, 0}, {7, 6, 5, 4, 3, 2}, {9, 8, 7, 6, 5, 4}};

class RelativeLogits2dMaps : public IsaTest {};

TEST_P(RelativeLogits2dMaps, SamRowsByHandSmallerQueryMap) {
  for (const auto order : {POSENC_RELATIVE_QUERY_MINUS_KEY, POSENC_RELATIVE_KEY_MINUS_QUERY}) {
    const RowProbe p(context(), 2, 3, 4, 6, 7, 11, order);
    const bool qmk = order == POSENC_RELATIVE_QUERY_MINUS_KEY;
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t h = 0; h < p.heads; ++h) {
        for (int64_t x1 = 0; x1 < 2; ++x1) {
          for (int64_t y1 = 0; y1 < 3; ++y1) {
            const int64_t n = (b * p.heads + h) * 6 + x1 * 3 + y1;
            SCOPED_TRACE(testing::Message() << "qmk " << qmk << " b " << b << " h " << h
                                            << " query (" << x1 << ", " << y1 << ")");
            // Key minus query: the mirrored rows, 6 and 10 minus these.
            for (int64_t x2 = 0; x2 < 4; ++x2) {
              const int64_t row = qmk ? kRowsH2x4[x1][x2] : 6 - kRowsH2x4[x1][x2];
              EXPECT_EQ(p.rel_h[size_t(n * 4 + x2)], float((b + 1) * (100 * h + row)));
            }
            for (int64_t y2 = 0; y2 < 6; ++y2) {
              const int64_t row = qmk ? kRowsW3x6[y1][y2] : 10 - kRowsW3x6[y1][y2];
              EXPECT_EQ(p.rel_w[size_t(n * 6 + y2)], float((b + 1) * (100 * h + row)));
            }
          }
        }
      }
    }
  }
}

// q map 4x6 against k map 2x3. get_rel_pos(4, 2): q_coords = a, k_coords =
// c * 2, offset (2-1) * 2 = 2: row = a - 2c + 2 of 7 rows; get_rel_pos(6, 3):
// row = a - 2c + 4 of 11 rows.
TEST_P(RelativeLogits2dMaps, SamRowsByHandLargerQueryMap) {
  const RowProbe p(context(), 4, 6, 2, 3, 7, 11, POSENC_RELATIVE_QUERY_MINUS_KEY);
  auto h_row = [&](int64_t x1, int64_t x2) { return p.rel_h[size_t((x1 * 6) * 2 + x2)]; };
  auto w_row = [&](int64_t y1, int64_t y2) { return p.rel_w[size_t(y1 * 3 + y2)]; };
  EXPECT_EQ(h_row(0, 0), 2.0f);
  EXPECT_EQ(h_row(0, 1), 0.0f);
  EXPECT_EQ(h_row(1, 1), 1.0f);
  EXPECT_EQ(h_row(3, 0), 5.0f);
  EXPECT_EQ(h_row(3, 1), 3.0f);
  EXPECT_EQ(w_row(0, 0), 4.0f);
  EXPECT_EQ(w_row(0, 2), 0.0f);
  EXPECT_EQ(w_row(3, 1), 5.0f);
  EXPECT_EQ(w_row(5, 0), 9.0f);
  EXPECT_EQ(w_row(5, 2), 5.0f);
  // Head 1 of batch entry 1, query (3, 5) = token 23: 2 * (100 + row).
  const int64_t n = (1 * 2 + 1) * 24 + 23;
  EXPECT_EQ(p.rel_h[size_t(n * 2 + 0)], 2.0f * (100 + 5));
  EXPECT_EQ(p.rel_w[size_t(n * 3 + 2)], 2.0f * (100 + 5));
}

// get_rel_pos(8, 6) rounds in float32 (k_coords = c * fl(4/3), offset
// fl(5 * 4/3) = 6.66666651): a = 0, c = 2 gives 3.99999976, row 3 (exactly
// 4); a = 1, c = 5 gives 0.99999952, row 0. Elsewhere the exact floor:
// a = 0, c = 0: 6.67 -> 6; a = 7, c = 1: 12.33 -> 12. The width is 1 against
// 1: row 0 of a one-row table.
TEST_P(RelativeLogits2dMaps, SamFloat32RowsByHand) {
  const RowProbe p(context(), 8, 1, 6, 1, 15, 1, POSENC_RELATIVE_QUERY_MINUS_KEY);
  EXPECT_EQ(p.rel_h[0 * 6 + 2], 3.0f);
  EXPECT_EQ(p.rel_h[1 * 6 + 5], 0.0f);
  EXPECT_EQ(p.rel_h[0 * 6 + 0], 6.0f);
  EXPECT_EQ(p.rel_h[7 * 6 + 1], 12.0f);
  for (int64_t n = 0; n < 8; ++n) EXPECT_EQ(p.rel_w[size_t(n)], 0.0f);
}

struct Maps {
  int64_t X, Y, KX, KY;
  posenc_relative_order order;
  int64_t batch, heads, dim;
};
constexpr auto kQmk = POSENC_RELATIVE_QUERY_MINUS_KEY;
constexpr auto kKmq = POSENC_RELATIVE_KEY_MINUS_QUERY;
const Maps kCases[] = {
    {2, 3, 4, 6, kQmk, 2, 3, 8},     {4, 6, 2, 3, kQmk, 2, 3, 1},
    {8, 6, 6, 8, kQmk, 1, 2, 80},    {7, 5, 7, 5, kQmk, 2, 3, 64},
    {5, 7, 5, 7, kKmq, 2, 3, 128},   {1, 7, 1, 7, kQmk, 1, 2, 8},
    {7, 1, 3, 1, kKmq, 1, 2, 64},    {1, 1, 3, 5, kQmk, 2, 1, 13},
    {13, 11, 5, 3, kKmq, 1, 2, 17},  {14, 14, 64, 64, kQmk, 1, 2, 64},
    {64, 64, 14, 14, kQmk, 1, 1, 8}, {3, 2, 2, 3, kQmk, 1, 67, 8},
};

TEST_P(RelativeLogits2dMaps, MatchesReference) {
  uint32_t seed = 500;
  for (const Maps& m : kCases) {
    for (const int64_t table_heads : {int64_t(1), m.heads}) {
      SCOPED_TRACE(testing::Message() << m.X << "x" << m.Y << " against " << m.KX << "x" << m.KY
                                      << " order " << m.order << " heads " << m.heads << " d "
                                      << m.dim << " table_heads " << table_heads);
      const ref::Axis2d axis_h{m.X, m.KX, m.order == kQmk}, axis_w{m.Y, m.KY, m.order == kQmk};
      const int64_t N = m.X * m.Y, rows = m.batch * m.heads * N;
      const auto q = random_floats(size_t(rows * m.dim), ++seed);
      const auto rh = random_floats(size_t(table_heads * axis_h.rows() * m.dim), ++seed);
      const auto rw = random_floats(size_t(table_heads * axis_w.rows() * m.dim), ++seed);
      GuardedFloats rel_h(size_t(rows * m.KX)), rel_w(size_t(rows * m.KY));
      const posenc_relative_2d_desc d =
          maps_desc(m.batch, m.heads, m.X, m.Y, m.KX, m.KY, m.dim, table_heads, m.order);
      ASSERT_EQ(posenc_relative_logits_2d_maps(context(), &d, q.data(), rh.data(), rw.data(),
                                               rel_h.data(), rel_w.data()),
                POSENC_OK)
          << posenc_last_error();
      const ref::Relative2d want = ref::relative_logits_2d_maps(
          m.batch, m.heads, axis_h, axis_w, m.dim, q.data(), rh.data(), rw.data(), table_heads);
      EXPECT_TRUE(all_close(rel_h.data(), want.rel_h, dot_atol(m.dim), kRtol));
      EXPECT_TRUE(all_close(rel_w.data(), want.rel_w, dot_atol(m.dim), kRtol));
      EXPECT_TRUE(rel_h.guards_intact());
      EXPECT_TRUE(rel_w.guards_intact());
    }
  }
}

// The default desc (and the query map given again as key map) is
// posenc_relative_logits_2d_decomposed, bit for bit.
TEST_P(RelativeLogits2dMaps, DefaultDescIsTheDecomposedLogits) {
  struct Map {
    int64_t height, width;
  };
  uint32_t seed = 700;
  for (const Map map : {Map{1, 7}, Map{7, 1}, Map{7, 5}, Map{14, 14}, Map{24, 40}}) {
    for (const int64_t table_heads : {1, 3}) {
      const int64_t batch = 2, heads = 3, dim = 24, N = map.height * map.width;
      SCOPED_TRACE(testing::Message() << map.height << "x" << map.width << " table_heads "
                                      << table_heads);
      const auto q = random_floats(size_t(batch * heads * N * dim), ++seed);
      const auto rh = random_floats(size_t(table_heads * (2 * map.height - 1) * dim), ++seed);
      const auto rw = random_floats(size_t(table_heads * (2 * map.width - 1) * dim), ++seed);
      std::vector<float> want_h(size_t(batch * heads * N * map.height));
      std::vector<float> want_w(size_t(batch * heads * N * map.width));
      ASSERT_EQ(posenc_relative_logits_2d_decomposed(context(), batch, heads, map.height,
                                                     map.width, dim, q.data(), rh.data(),
                                                     rw.data(), table_heads, want_h.data(),
                                                     want_w.data()),
                POSENC_OK);
      posenc_relative_2d_desc d;
      posenc_relative_2d_desc_init(&d, batch, heads, map.height, map.width, dim);
      d.table_heads = table_heads;
      for (const bool explicit_key_map : {false, true}) {
        if (explicit_key_map) {
          d.kv_map_height = map.height;
          d.kv_map_width = map.width;
        }
        std::vector<float> rel_h(want_h.size()), rel_w(want_w.size());
        ASSERT_EQ(posenc_relative_logits_2d_maps(context(), &d, q.data(), rh.data(), rw.data(),
                                                 rel_h.data(), rel_w.data()),
                  POSENC_OK)
            << posenc_last_error();
        EXPECT_EQ(std::memcmp(rel_h.data(), want_h.data(), want_h.size() * sizeof(float)), 0);
        EXPECT_EQ(std::memcmp(rel_w.data(), want_w.data(), want_w.size() * sizeof(float)), 0);
      }
    }
  }
}

// posenc_relative_2d_desc_init called from C (relative_c_calls.c) fills the
// defaults: the decomposed logits, bit for bit, on the default context.
TEST(RelativeMapsCApi, DescInitFromCIsTheDecomposedLogits) {
  const int64_t batch = 2, heads = 3, height = 5, width = 7, dim = 8, N = height * width;
  const auto q = random_floats(size_t(batch * heads * N * dim), 801);
  const auto rh = random_floats(size_t((2 * height - 1) * dim), 802);
  const auto rw = random_floats(size_t((2 * width - 1) * dim), 803);
  std::vector<float> want_h(size_t(batch * heads * N * height)), rel_h(want_h.size());
  std::vector<float> want_w(size_t(batch * heads * N * width)), rel_w(want_w.size());
  ASSERT_EQ(posenc_relative_logits_2d_decomposed(nullptr, batch, heads, height, width, dim,
                                                 q.data(), rh.data(), rw.data(), 1,
                                                 want_h.data(), want_w.data()),
            POSENC_OK);
  ASSERT_EQ(c_relative_2d_maps_with_defaults(batch, heads, height, width, dim, q.data(),
                                             rh.data(), rw.data(), rel_h.data(), rel_w.data()),
            POSENC_OK)
      << posenc_last_error();
  EXPECT_EQ(std::memcmp(rel_h.data(), want_h.data(), want_h.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(rel_w.data(), want_w.data(), want_w.size() * sizeof(float)), 0);
}

TEST(RelativeMapsCppApi, WrapperRunsAndThrows) {
  posenc::Context context;
  posenc_relative_2d_desc d = posenc::relative_2d_desc(1, 1, 2, 3, 2);
  EXPECT_EQ(d.table_heads, 1);
  EXPECT_EQ(d.kv_map_height, 0);
  EXPECT_EQ(d.relative_order, POSENC_RELATIVE_KEY_MINUS_QUERY);
  d.kv_map_height = 4;
  d.kv_map_width = 6;
  d.relative_order = POSENC_RELATIVE_QUERY_MINUS_KEY;
  const std::vector<float> q(6 * 2, 1.0f), rh(7 * 2, 1.0f), rw(11 * 2, 1.0f);
  std::vector<float> rel_h(6 * 4), rel_w(6 * 6);
  posenc::relative_logits_2d_maps(context, d, q.data(), rh.data(), rw.data(), rel_h.data(),
                                  rel_w.data());
  EXPECT_EQ(rel_h[5], 2.0f);
  d.kv_map_width = 0;
  try {
    posenc::relative_logits_2d_maps(context, d, q.data(), rh.data(), rw.data(), rel_h.data(),
                                    rel_w.data());
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("desc->kv_map_width"), std::string::npos);
  }
}

POSENC_INSTANTIATE_ISA_TESTS(RelativeLogits2dMaps);

}  // namespace
}  // namespace posenc::test
