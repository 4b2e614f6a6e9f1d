// The table rows of DeBERTa's disentangled attention (posenc/attention.h,
// bias DISENTANGLED), the rule the ops and the API's validation share (the
// reference writes it out apart: src/reference/attention.cpp).
//
// A query at position p and the key at j are r = p - j apart (query minus
// key); their row is clamp(delta(r) + S, 0, 2S - 1) of a table of 2S rows,
// delta(r) = r, or with DeBERTa's log buckets r for |r| <= m and
// sign(r) (ceil(ln(|r| / m) / ln((M - 1) / m) (m - 1)) + m) past them. The
// row never decreases with r.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace posenc {

struct DisentangledIndex {
  int64_t span;     // S
  int64_t linear;   // m: |r| <= m are their own buckets (0: no buckets)
  double log_base;  // ln((M - 1) / m)

  int64_t rows() const { return 2 * span; }

  // The row of query minus key distance r (DeBERTa's order of operations).
  int64_t row(int64_t r) const {
    double delta = double(r);
    if (linear > 0 && (r > linear || r < -linear)) {
      const double magnitude =
          std::ceil(std::log(std::fabs(delta) / double(linear)) / log_base * double(linear - 1)) +
          double(linear);
      delta = r > 0 ? magnitude : -magnitude;
    }
    return int64_t(std::clamp(delta + double(span), 0.0, double(rows() - 1)));
  }
};

// num_buckets B >= 2 with max_distance M >= least_bucketed_max_distance(B),
// or num_buckets 0 with max_distance S >= 1 (the API checks them).
inline DisentangledIndex disentangled_index(int64_t num_buckets, int64_t max_distance) {
  if (num_buckets == 0) return DisentangledIndex{max_distance, 0, 0.0};
  const int64_t m = num_buckets / 2;
  return DisentangledIndex{num_buckets, m, std::log(double(max_distance - 1) / double(m))};
}

// The least max_distance M of B buckets none of which skips a row: the log
// buckets grow by at most one row per distance (their steps shrink with
// the distance) where the first of them, distance m + 1, is row m + 1 past
// the center: ln((M - 1) / m) >= (m - 1) ln((m + 1) / m) (DeBERTa's B 256
// needs M >= 345; it has 512). A block of D distances then reads at most
// D rows.
inline int64_t least_bucketed_max_distance(int64_t num_buckets) {
  const int64_t m = num_buckets / 2;
  const double bound = double(m) * std::pow(1.0 + 1.0 / double(m), double(m - 1)) + 1.0;
  int64_t max_distance = std::max(m + 2, int64_t(bound) - 2);
  while (disentangled_index(num_buckets, max_distance).row(m + 1) > num_buckets + m + 1) {
    ++max_distance;
  }
  return max_distance;
}

}  // namespace posenc
