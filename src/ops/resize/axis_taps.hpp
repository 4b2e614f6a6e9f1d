// torch.nn.functional.interpolate's weights along one axis, align_corners=
// False (posenc/absolute.h states the rules): for each output index, the
// inputs it reads and their weights, as torch reads them (an index clamped
// at a border is read once per tap, so a non-finite input meets every
// weight torch gives it, 0 included). Laid out in memory the caller gives
// (a call's kept scratch: repeated calls allocate nothing).
#pragma once

#include <cstddef>
#include <cstdint>

namespace posenc::ops {

// copy: each output reads its own input with weight 1 (equal sizes).
enum class Interpolation { linear, cubic, copy };

// One axis of a resize: out_size outputs over in_size inputs (both >= 1),
// the source advancing in_per_out inputs per output (in_size / out_size, or
// 1 / torch's scale_factor).
struct AxisResize {
  int64_t in_size, out_size;
  double in_per_out;
  Interpolation interpolation;
  bool antialias;
};

// The same size, copied.
inline AxisResize axis_copy(int64_t size) {
  return AxisResize{size, size, 1.0, Interpolation::copy, false};
}

struct AxisTaps {
  int64_t stride;   // the most inputs one output reads
  int64_t* count;   // [outputs]: how many it reads, >= 1
  int64_t* index;   // [outputs, stride]: count of them used
  double* weights;  // [outputs, stride]

  const int64_t* indices_of(int64_t output) const { return index + output * stride; }
  const double* weights_of(int64_t output) const { return weights + output * stride; }
};

// The bytes axis_taps lays the axis's taps out in (a multiple of 8).
size_t taps_bytes(const AxisResize& axis);

// The axis's taps, laid out in `memory` (taps_bytes of it, 8-byte aligned).
AxisTaps axis_taps(const AxisResize& axis, void* memory);

}  // namespace posenc::ops
