// The row of a learned 2D relative bias table (Swin v1's
// relative_position_index; BEiT's class-token rows): the one home of the rule
// (posenc/bias.h, TABLE_2D).
#pragma once

#include <cstdint>

namespace posenc::ops {

// A Wh x Ww window's tokens, with BEiT's class token first when class_token.
struct Window2d {
  int64_t height, width;
  bool class_token;

  // (2Wh-1)(2Ww-1): the table rows of the relative coordinates.
  int64_t relative_rows() const { return (2 * height - 1) * (2 * width - 1); }
  int64_t table_rows() const { return relative_rows() + (class_token ? 3 : 0); }

  // The table row of query token i and key token j:
  // (dy + Wh - 1) * (2Ww - 1) + (dx + Ww - 1) with (dy, dx) = query minus key
  // coordinates; with the class token, L = relative_rows() for class to
  // token, L + 1 for token to class, L + 2 for class to class.
  int64_t index(int64_t i, int64_t j) const {
    if (class_token) {
      if (i == 0) return relative_rows() + (j == 0 ? 2 : 0);
      if (j == 0) return relative_rows() + 1;
      --i;
      --j;
    }
    return cell_index(i / width, i % width, j / width, j % width);
  }
  // The row of query cell (qy, qx) and key cell (ky, kx).
  int64_t cell_index(int64_t qy, int64_t qx, int64_t ky, int64_t kx) const {
    return (qy - ky + height - 1) * (2 * width - 1) + (qx - kx + width - 1);
  }
};

}  // namespace posenc::ops
