// The 1D relative table of posenc/relative.h and posenc/attention.h, the one
// rule shared by the ops and the API's validation (the reference loops write
// it out apart: src/reference/relative.hpp).
//
// Query i sits at position p + i (p = query_offset), key j at position j; the
// distance is j - (p + i). Unclipped, row 0 is the distance -(p + queries - 1)
// (query queries-1 against key 0), so distance 0 is row p + queries - 1 and
// row(i, j) = j - i + queries - 1; the table covers the distances of every
// position in [min(p, 0), p + queries) against every key: queries + keys - 1
// + max(p, 0) rows. For p >= 0 that is the whole sequence's table, so a decode
// step (queries = 1, p = keys - 1) takes the [2 keys - 1, dim] table of the
// prefill; its last max(p, 0) rows are never read. Clipped (clip = K > 0),
// distances are clamped to [-K, K] and the table has 2K + 1 rows, distance 0
// at row K. The rows of a table are also the stride of per-head tables.
#pragma once

#include <cstdint>

namespace posenc {

struct RelativeIndex {
  int64_t query_offset;  // p
  int64_t clip;          // K > 0, or 0 for none
  int64_t center;        // the row of distance 0
  int64_t rows;          // rows of one table (the per-head stride)
  int64_t readable;      // rows [0, readable) are the only ones a logit reads

  // The row of a distance (key minus query position).
  constexpr int64_t row(int64_t distance) const {
    if (clip > 0) return (distance < -clip ? -clip : distance > clip ? clip : distance) + clip;
    return distance + center;
  }
  // The row of query i and key j.
  constexpr int64_t row(int64_t i, int64_t j) const { return row(j - (query_offset + i)); }
};

// The caller keeps p + queries + keys and 2 clip + 1 from overflowing.
constexpr RelativeIndex relative_index(int64_t query_offset, int64_t queries, int64_t keys,
                                       int64_t clip) {
  if (clip > 0) return RelativeIndex{query_offset, clip, clip, 2 * clip + 1, 2 * clip + 1};
  const int64_t readable = queries + keys - 1;
  return RelativeIndex{query_offset, 0, query_offset + queries - 1,
                       readable + (query_offset > 0 ? query_offset : 0), readable};
}

}  // namespace posenc
