// The row of a learned 2D relative bias table (Swin v1's
// relative_position_index; BEiT's class-token rows): the one home of the rule
// (posenc/bias.h, TABLE_2D), and the rows of the bias read from a head's
// table in an order where they are runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace posenc::ops {

// A Wh x Ww window's tokens, with BEiT's class token first when class_token.
struct Window2d {
  int64_t height, width;
  bool class_token;

  // (2Wh-1)(2Ww-1): the table rows of the relative coordinates.
  int64_t relative_rows() const { return (2 * height - 1) * (2 * width - 1); }
  int64_t table_rows() const { return relative_rows() + (class_token ? 3 : 0); }

  // The table row of query cell (qy, qx) and key cell (ky, kx):
  // (dy + Wh - 1) * (2Ww - 1) + (dx + Ww - 1) with (dy, dx) = query minus key
  // coordinates. With the class token, L = relative_rows() is the row of
  // class to token, L + 1 of token to class, L + 2 of class to class.
  int64_t cell_index(int64_t qy, int64_t qx, int64_t ky, int64_t kx) const {
    return (qy - ky + height - 1) * (2 * width - 1) + (qx - kx + width - 1);
  }

  // A head's entries, the order the rows read them (add_window_row,
  // write_window_row): the relative rows reversed, then the class token's
  // three. Entry e holds table row stored_row(e).
  int64_t stored_row(int64_t e) const { return e < relative_rows() ? relative_rows() - 1 - e : e; }
};

// Every head's entries, [heads, table_rows()], from a table stored
// [table_rows(), heads]: entry e of head h is stored(stored_row(e) * heads + h),
// `stored` reading (and converting or scaling) one element of the table.
template <class Stored>
void window_entries(const Window2d& window, int64_t heads, const Stored& stored, float* entries) {
  const int64_t rows = window.table_rows();
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t e = 0; e < rows; ++e) {
      entries[h * rows + e] = stored(window.stored_row(e) * heads + h);
    }
  }
}

// row[c] += the bias of query token i and key token first_key + c, c < count,
// from one head's entries (Window2d::stored_row); returns the largest new
// row[c] (-inf for count 0). Reversed, the entry of key cell (ky, kx) is
// L - 1 - cell_index(qy, qx, ky, kx): it grows by one with kx, and the start
// of a key row grows by 2Ww - 1 with ky, so a row is runs of up to Ww
// consecutive entries, which add_runs(from, stride, column, length, row, n)
// adds (PositionBiasKernels::add_runs).
template <class AddRuns>
float add_window_row(const Window2d& window, const float* entries, int64_t i, int64_t first_key,
                     int64_t count, float* row, const AddRuns& add_runs) {
  const int64_t relative = window.relative_rows();
  float row_max = -std::numeric_limits<float>::infinity();  // of the columns added so far
  int64_t c = 0, cell = first_key;  // cell: the window cell of key first_key + c
  if (window.class_token) {
    if (i == 0) {
      for (; c < count; ++c) {
        row[c] += entries[relative + (first_key + c == 0 ? 2 : 0)];
        row_max = std::max(row_max, row[c]);
      }
      return row_max;
    }
    if (first_key == 0 && count > 0) {
      row[c] += entries[relative + 1];
      row_max = row[c++];
    }
    --i;
    cell = first_key + c - 1;
  }
  if (c == count) return row_max;
  const int64_t width = window.width;
  const int64_t qy = i / width, qx = i % width;
  // The entries of key row ky = cell / width start here.
  const int64_t start = relative - 1 - window.cell_index(qy, qx, cell / width, 0);
  return std::max(
      row_max, add_runs(entries + start, 2 * width - 1, cell % width, width, row + c, count - c));
}

// row[c] = the bias of query token i and key token c for every token c of
// the window: a whole row of the dense bias, its runs copied by
// copy_runs(from, stride, runs, length, to) (PositionBiasKernels::copy_runs
// or copy_runs_stream).
template <class CopyRuns>
void write_window_row(const Window2d& window, const float* entries, int64_t i, float* row,
                      const CopyRuns& copy_runs) {
  const int64_t relative = window.relative_rows();
  if (window.class_token) {  // BEiT: the class token's own three entries
    if (i == 0) {
      std::fill_n(row, window.height * window.width + 1, entries[relative]);
      row[0] = entries[relative + 2];
      return;
    }
    *row++ = entries[relative + 1];
    --i;
  }
  const int64_t width = window.width;
  copy_runs(entries + relative - 1 - window.cell_index(i / width, i % width, 0, 0),
            2 * width - 1, window.height, width, row);
}

}  // namespace posenc::ops
