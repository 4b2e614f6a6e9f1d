#include "cases/values.hpp"

#include <cmath>
#include <limits>

#include "posenc/core.h"

namespace posenc::cases {

std::vector<float> seeded_floats(size_t count, uint32_t seed) {
  std::vector<float> values(count);
  uint64_t state = 0x9E3779B97F4A7C15ull * (uint64_t(seed) + 1);
  for (float& v : values) {
    // splitmix64: each step a well-mixed 64-bit value; its top 24 bits
    // give a float in [0, 1) exactly.
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = float(z >> 40) * 0x1p-23f - 1.0f;
  }
  return values;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = posenc_f32_to_bf16(values[i]);
  return bits;
}

std::vector<float> from_bf16(const std::vector<uint16_t>& bits) {
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = posenc_bf16_to_f32(bits[i]);
  return values;
}

std::vector<float> rounded_to_bf16(const std::vector<float>& values) {
  return from_bf16(to_bf16(values));
}

double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      const bool same = std::isnan(w) ? std::isnan(g) : g == w;
      if (!same) return std::numeric_limits<double>::infinity();
      continue;
    }
    const double err = std::fabs(g - w);
    if (std::isnan(err)) return err;
    if (err > worst) worst = err;
  }
  return worst;
}

}  // namespace posenc::cases
