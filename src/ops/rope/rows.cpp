#include "ops/rope/rows.hpp"

#include <cmath>

namespace posenc::ops {
namespace {

// Writes pairs [first, first + count) of a row from their cos and sin, each
// multiplied by the attention factor: in double for the exact rows, in fp32
// for the fast ones.
template <class Real>
void write_pairs(const RopeAngles& angles, const Real* cos, const Real* sin, int64_t first,
                 int64_t count, float* row) {
  const int64_t rotary_dim = angles.config.rotary_dim;
  const Real scale = Real(angles.attention_factor);
  if (angles.config.pairing == POSENC_ROPE_INTERLEAVED) {
    float* cos_row = row + 2 * first;
    float* sin_row = row + rotary_dim + 2 * first;
    for (int64_t j = 0; j < count; ++j) {
      cos_row[2 * j] = cos_row[2 * j + 1] = float(scale * cos[j]);
      sin_row[2 * j] = -float(scale * sin[j]);
      sin_row[2 * j + 1] = float(scale * sin[j]);
    }
  } else {
    const int64_t pairs = angles.pairs();
    for (int64_t j = 0; j < count; ++j) {
      row[first + j] = float(scale * cos[j]);
      row[pairs + first + j] = float(scale * sin[j]);
    }
  }
}

// Calls axis(first_pair, axis_position) for each axis of the position: the
// whole row in 1D; in 2D the grid cell's row then its column, or its column
// then its row (column_first).
template <class Axis>
void for_each_axis(const RopeAngles& angles, int64_t position, const Axis& axis) {
  const int64_t width = angles.config.grid_width;
  if (width == 0) {
    axis(0, position);
  } else {
    const int64_t half = angles.pairs() / 2;
    const int64_t row = position / width, column = position % width;
    const bool column_first = angles.config.column_first != 0;
    axis(0, column_first ? column : row);
    axis(half, column_first ? row : column);
  }
}

}  // namespace

void exact_rope_row(const RopeAngles& angles, int64_t position, float* row, double* scratch) {
  const size_t count = angles.axis_inv_freq.size();
  double* cos = scratch;
  double* sin = scratch + count;
  for_each_axis(angles, position, [&](int64_t first, int64_t axis_position) {
    for (size_t j = 0; j < count; ++j) {
      const double angle = double(axis_position) * angles.axis_inv_freq[j];
      cos[j] = std::cos(angle);
      sin[j] = std::sin(angle);
    }
    write_pairs(angles, cos, sin, first, int64_t(count), row);
  });
}

void fast_rope_row(const ExecContext& ctx, const RopeAngles& angles, int64_t position,
                   float* row, float* scratch) {
  const int64_t count = int64_t(angles.axis_inv_freq.size());
  float* sincos = scratch;  // [sin | cos] of one axis
  for_each_axis(angles, position, [&](int64_t first, int64_t axis_position) {
    ctx.kernels->absolute.sinusoid_row(axis_position, angles.axis_inv_freq.data(), 2 * count,
                                       POSENC_SINCOS_SPLIT, sincos);
    write_pairs(angles, sincos + count, sincos, first, count, row);
  });
}

void table_rope_row(const RopeAngles& angles, const float* cos, const float* sin, float* row) {
  write_pairs(angles, cos, sin, 0, angles.pairs(), row);
}

}  // namespace posenc::ops
