// Reference loops for the position biases of posenc/bias.h, written the way
// the models write them (Swin's and BEiT's index matrices, T5's bucket
// function, BLOOM's slopes), in double where they compute: the truth for
// tests and checks.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/bias.h"

namespace posenc::reference {

// Swin's relative_position_index of a Wh x Ww window, [N, N] row-major:
// coordinates stacked, pairwise differences (query minus key), shifted by
// Wh-1 and Ww-1, the row difference times 2Ww-1, summed; with class_token,
// BEiT's: padded by one row and column in front, row 0 set to L, column 0
// to L+1, [0,0] to L+2 (L = (2Wh-1)(2Ww-1)).
std::vector<int64_t> swin_relative_position_index(int64_t height, int64_t width,
                                                  bool class_token);

// T5's _relative_position_bucket of one relative position (key minus query).
int64_t t5_relative_position_bucket(int64_t relative_position, bool bidirectional,
                                    int64_t num_buckets, int64_t max_distance);

// BLOOM's build_alibi_tensor slopes, in double.
std::vector<double> alibi_slopes(int64_t heads);

// The dense bias [heads, q_len, kv_len] of posenc_position_bias.
std::vector<double> position_bias(const posenc_position_bias_desc& desc, const float* table);

// torch's interpolate(mode="linear", align_corners=False) of a [rows, dim]
// table along the rows to [new_rows, dim], in double.
std::vector<double> resize_rows_linear(int64_t rows, int64_t dim, const float* in,
                                       int64_t new_rows);

// torch's interpolate(mode="bicubic", align_corners=False) of each head's
// (2Wh-1) x (2Ww-1) grid of a [(2Wh-1)(2Ww-1) + 3*class_token, heads]
// table, the class-token rows copied; in double with Keys' kernel
// (A = -0.75) by distance.
std::vector<double> resize_bias_table_2d(int64_t heads, int64_t height, int64_t width,
                                         int64_t new_height, int64_t new_width,
                                         bool class_token, const float* in);

}  // namespace posenc::reference
