// ALiBi's standard slopes (Press et al.'s get_slopes, BLOOM's
// build_alibi_tensor, MPT's gen_slopes): the one home of the rule
// (posenc/bias.h, posenc_alibi_slopes).
#pragma once

#include <cmath>
#include <cstdint>

namespace posenc::ops {

// The slope of head h of `heads`: with p the largest power of two <= heads,
// 2^(-8(h+1)/p) for h < p, then 2^(-8(2k+1)/(2p)) for head p + k (the odd
// powers of the slopes of 2p heads).
inline float alibi_slope(int64_t h, int64_t heads) {
  int64_t p = 1;
  while (p <= heads / 2) p *= 2;
  const double exponent = h < p ? -8.0 * double(h + 1) / double(p)
                                : -4.0 * double(2 * (h - p) + 1) / double(p);
  return float(std::exp2(exponent));
}

}  // namespace posenc::ops
