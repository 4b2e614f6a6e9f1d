// T5's relative position bucket (transformers' T5Attention.
// _relative_position_bucket, after Mesh TensorFlow): the one home of the rule
// (posenc/bias.h, T5).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace posenc::ops {

struct T5Buckets {
  int64_t num_buckets, max_distance;
  bool bidirectional;

  // The buckets of one direction (n) and the exact ones among them.
  int64_t direction_buckets() const { return bidirectional ? num_buckets / 2 : num_buckets; }
  int64_t max_exact() const { return direction_buckets() / 2; }

  // The bucket of distance d = key - query, in [0, num_buckets).
  int64_t bucket(int64_t d) const {
    const int64_t n = direction_buckets();
    int64_t first = 0, r;
    if (bidirectional) {
      first = d > 0 ? n : 0;
      r = d < 0 ? -d : d;
    } else {
      r = d < 0 ? -d : 0;
    }
    const int64_t exact = max_exact();
    if (r < exact) return first + r;
    // In fp32, step by step as the PyTorch code: log(r / exact) /
    // log(max_distance / exact) (a double rounded to fp32) * (n - exact),
    // truncated toward zero, so boundary distances (64 of the defaults: 6.0
    // exactly) land where they do there. The fp32 log is the double one
    // rounded: correctly rounded but for 2 of the floats in [1, 2^41), where
    // the C library's logf is an ulp off for about 1 in 2,000.
    const float ratio = float(r) / float(exact);
    const float range = float(std::log(double(max_distance) / double(exact)));
    const float large = float(std::log(double(ratio))) / range * float(n - exact);
    return first + std::min(exact + int64_t(large), n - 1);
  }
};

}  // namespace posenc::ops
