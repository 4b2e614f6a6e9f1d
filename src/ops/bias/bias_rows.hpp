// The position biases of posenc/bias.h row by row: BiasRows writes the
// dense op's whole rows (the fused attention adds blocks of them:
// ops/attention/position_bias.cpp). The index rules live in
// table_2d_index.hpp, t5_bucket.hpp and alibi_slopes.hpp.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernel_table.hpp"
#include "ops/bias/alibi_slopes.hpp"
#include "ops/bias/t5_bucket.hpp"
#include "ops/bias/table_2d_index.hpp"
#include "posenc/bias.h"

namespace posenc::ops {

// A bias that depends on the distance d only, as one line of values per
// head: value(h, d) = values[h * stride + clamp(d, lo, hi) - lo] (the 1D
// table's rows, T5's buckets looked up once per distance), gathered by
// RelativeKernels::gather_row (the dense op) and
// AttentionBiasKernels::gather_add (the fused attention).
struct DistanceLine {
  const float* values;
  int64_t stride, lo, hi;
};

// The distances d = j - (query_offset + i) of a desc, lowest and highest.
struct DistanceRange {
  int64_t lowest, highest;
};
inline DistanceRange distance_range(const posenc_position_bias_desc& d) {
  return {-(d.query_offset + d.q_len - 1), d.kv_len - 1 - d.query_offset};
}

inline T5Buckets t5_buckets(const posenc_position_bias_desc& d) {
  return T5Buckets{d.num_buckets, d.max_distance, d.bidirectional != 0};
}

// T5's lines span the distances that occur clamped to +-max_distance: the
// bucket is the same for every |d| >= max_distance (the last of its
// direction), so clamping the distance there changes nothing.
inline DistanceRange t5_line_range(const posenc_position_bias_desc& d) {
  const DistanceRange r = distance_range(d);
  return {std::clamp(r.lowest, -d.max_distance, d.max_distance),
          std::clamp(r.highest, -d.max_distance, d.max_distance)};
}

class BiasRows {
 public:
  // The floats a desc needs prepared before its rows: the 2D table's entries
  // per head (write_window_row), T5's lines ([heads, distances]), ALiBi's
  // standard slopes; 0 for the 1D table.
  static int64_t prepared_floats(const posenc_position_bias_desc& d) {
    if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
      return d.heads * Window2d{d.window_height, d.window_width, d.class_token != 0}.table_rows();
    }
    if (d.kind == POSENC_POSITION_BIAS_T5) {
      const DistanceRange r = t5_line_range(d);
      return d.heads * (r.highest - r.lowest + 1);
    }
    return d.kind == POSENC_POSITION_BIAS_ALIBI ? d.heads : 0;
  }

  // table as posenc_position_bias takes it; prepared: prepared_floats(d)
  // floats, filled here (serially: it is small next to the rows).
  BiasRows(const posenc_position_bias_desc& d, const float* table, float* prepared)
      : desc_(d), table_(table), window_{d.window_height, d.window_width, d.class_token != 0} {
    if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
      window_entries(window_, d.heads, [&](int64_t k) { return table[k]; }, prepared);
      table_ = prepared;
    } else if (d.kind == POSENC_POSITION_BIAS_TABLE_1D) {
      line_ = DistanceLine{table, 2 * d.max_distance + 1, -d.max_distance, d.max_distance};
    } else if (d.kind == POSENC_POSITION_BIAS_T5) {
      const DistanceRange r = t5_line_range(d);
      const int64_t width = r.highest - r.lowest + 1;
      const T5Buckets buckets = t5_buckets(d);
      for (int64_t k = 0; k < width; ++k) {
        const float* bucket_row = table + buckets.bucket(r.lowest + k) * d.heads;
        for (int64_t h = 0; h < d.heads; ++h) prepared[h * width + k] = bucket_row[h];
      }
      line_ = DistanceLine{prepared, width, r.lowest, r.highest};
    } else if (d.kind == POSENC_POSITION_BIAS_ALIBI) {
      if (table == nullptr) {
        for (int64_t h = 0; h < d.heads; ++h) prepared[h] = alibi_slope(h, d.heads);
        table_ = prepared;
      }
    }
  }

  // Writes bias[h, i, 0 .. kv_len) to row with the kernels' vector rows,
  // with their streamed variants if stream: the distance lines' (TABLE_1D,
  // T5) gathered, ALiBi's computed, TABLE_2D's runs of Ww entries copied
  // (streamed on AVX-512 only; BEiT's class-token row is a fill).
  void write_row(const KernelTable& kernels, bool stream, int64_t h, int64_t i,
                 float* row) const {
    const int64_t count = desc_.kv_len, d0 = -(desc_.query_offset + i);
    switch (desc_.kind) {
      case POSENC_POSITION_BIAS_TABLE_2D: {
        const auto& k = kernels.position_bias;
        return write_window_row(window_, table_ + h * window_.table_rows(), i, row,
                                stream ? k.copy_runs_stream : k.copy_runs);
      }
      case POSENC_POSITION_BIAS_ALIBI: {
        const auto& k = kernels.position_bias;
        return (stream ? k.alibi_row_stream : k.alibi_row)(table_[h], desc_.bidirectional != 0,
                                                            d0, count, row);
      }
      default: {  // value(h, d0 + c) = values[clamp(d0 + c - lo, 0, hi - lo)]
        const auto& k = kernels.relative;
        return (stream ? k.gather_row_stream : k.gather_row)(
            line_.values + h * line_.stride, line_.hi - line_.lo + 1, d0 - line_.lo, count,
            row, count);
      }
    }
  }

 private:
  posenc_position_bias_desc desc_;
  // The table as given, or what the constructor prepared in its place
  // (TABLE_2D's entries, ALiBi's standard slopes).
  const float* table_;
  Window2d window_;
  DistanceLine line_{};
};

}  // namespace posenc::ops
