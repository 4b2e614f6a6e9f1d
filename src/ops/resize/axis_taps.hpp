// torch.nn.functional.interpolate's weights along one axis, align_corners=
// False (posenc/absolute.h states the rules): for each output index, the
// inputs it reads and their weights, as torch reads them (an index clamped
// at a border is read once per tap, so a non-finite input meets every
// weight torch gives it, 0 included).
#pragma once

#include <cstdint>
#include <vector>

namespace posenc::ops {

enum class Interpolation { linear, cubic };

struct AxisTaps {
  int64_t stride = 0;           // the most inputs one output reads
  std::vector<int64_t> count;   // [outputs]: how many it reads, >= 1
  std::vector<int64_t> index;   // [outputs, stride]: count of them used
  std::vector<double> weights;  // [outputs, stride]

  const int64_t* indices_of(int64_t output) const { return index.data() + output * stride; }
  const double* weights_of(int64_t output) const { return weights.data() + output * stride; }
};

// Each of `size` outputs reads its own input with weight 1: a copy.
AxisTaps copy_taps(int64_t size);

// The taps of out_size outputs over in_size inputs (both >= 1), the source
// advancing in_per_out inputs per output (in_size / out_size, or 1 / torch's
// scale_factor).
AxisTaps axis_taps(int64_t in_size, int64_t out_size, double in_per_out,
                   Interpolation interpolation, bool antialias);

}  // namespace posenc::ops
