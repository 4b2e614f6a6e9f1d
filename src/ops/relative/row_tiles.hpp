// Query rows of a [batch, heads, tokens, dim] tensor cut into tiles for the
// threads. With a table shared by all heads the batch * heads * tokens rows
// are one sequence and a tile may cross heads (bigger GEMMs for short
// sequences); with per-head tables a tile stays within one head.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/ceil_div.hpp"

namespace posenc::ops {

struct RowTile {
  int64_t row0;  // first row, in [0, batch * heads * tokens)
  int64_t rows;
  int64_t head;  // the table to use: the head (per-head tables) or 0
};

class RowTiles {
 public:
  RowTiles(int64_t batch, int64_t heads, int64_t tokens, bool per_head_tables,
           int64_t max_tile_rows)
      : heads_(heads),
        groups_(per_head_tables ? batch * heads : 1),
        group_rows_(per_head_tables ? tokens : batch * heads * tokens),
        tile_rows_(std::min(max_tile_rows, group_rows_)),
        tiles_per_group_(ceil_div(group_rows_, tile_rows_)),
        per_head_(per_head_tables) {}

  int64_t count() const { return groups_ * tiles_per_group_; }

  RowTile tile(int64_t index) const {
    const int64_t group = index / tiles_per_group_;
    const int64_t first = (index % tiles_per_group_) * tile_rows_;
    return RowTile{group * group_rows_ + first, std::min(tile_rows_, group_rows_ - first),
                   per_head_ ? group % heads_ : 0};
  }

 private:
  int64_t heads_, groups_, group_rows_, tile_rows_, tiles_per_group_;
  bool per_head_;
};

}  // namespace posenc::ops
