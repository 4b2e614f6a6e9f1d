// One axis of the decomposed 2D relative logits of posenc/attention.h
// (RELATIVE_2D): the table row of a query coordinate and a key coordinate,
// the one rule shared by the fused attention, the API's validation and the
// reference loops.
//
// Query coordinates are [0, q), key coordinates [0, k); the table has
// 2 max(q, k) - 1 rows. With q = k the row is the plain relative coordinate,
// c - a + k - 1 (key minus query) or a - c + k - 1 (query minus key). With
// q != k it is SAM's get_rel_pos (segment_anything, modeling/image_encoder.py),
// which scales the coordinates of the shorter side up to the longer one:
//   row = long(a * max(k/q, 1) - c * max(q/k, 1) + (k-1) * max(q/k, 1))
// for query minus key, evaluated as torch evaluates it there: the ratios and
// the offset in double, then rounded to float32; each product, the
// difference and the sum in float32; long() truncating toward zero. Key minus
// query takes the mirrored row, 2 max(q, k) - 2 minus that one. (float32
// rounding makes the row differ from the exact floor for some non-integer
// ratios, e.g. q = 8, k = 6; SAM's row is the one its weights were trained
// with.)
#pragma once

#include <algorithm>
#include <cstdint>

namespace posenc {

struct RelativeAxis {
  int64_t q, k;          // query and key sizes along the axis
  bool query_minus_key;  // POSENC_RELATIVE_QUERY_MINUS_KEY

  // 2 max(q, k) - 1, summed so as not to overflow for max(q, k) = 2^62.
  int64_t rows() const { return std::max(q, k) + (std::max(q, k) - 1); }

  // Whether row(a, c) = c + shift(a): the key minus query order on maps of
  // one size, whose rows for a query are a window of the table.
  bool is_window() const { return !query_minus_key && q == k; }
  int64_t shift(int64_t a) const { return q - 1 - a; }

  int64_t row(int64_t a, int64_t c) const {
    const int64_t qmk = q == k ? a - c + k - 1 : scaled_query_minus_key(a, c);
    return query_minus_key ? qmk : rows() - 1 - qmk;
  }

 private:
  // float32 x * y and x + y: the double results are exact for the values
  // here (coordinates below 2^24), so the casts round as float32 arithmetic
  // does, and no compiler can fuse them into a multiply-add.
  static float mul32(float x, float y) { return float(double(x) * double(y)); }
  static float add32(float x, float y) { return float(double(x) + double(y)); }

  int64_t scaled_query_minus_key(int64_t a, int64_t c) const {
    const double q_scale = std::max(double(k) / double(q), 1.0);
    const double k_scale = std::max(double(q) / double(k), 1.0);
    const float q_coord = mul32(float(a), float(q_scale));
    const float k_coord = mul32(float(c), float(k_scale));
    const float offset = float(double(k - 1) * k_scale);
    const auto row = int64_t(add32(add32(q_coord, -k_coord), offset));
    // float32 rounding can reach a row past the table only on axes of
    // millions of positions (q = 8651268 against k = 8651284), where SAM's
    // own indexing would fail: kept inside.
    return std::clamp<int64_t>(row, 0, rows() - 1);
  }
};

}  // namespace posenc
