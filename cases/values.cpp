#include "cases/values.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

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

namespace {

enum class Form { as_is, bf16_values, bf16_bits };

// The live input of (form, count, seed), or a new one from make().
template <class T, class Make>
Shared<T> shared(Form form, size_t count, uint32_t seed, const Make& make) {
  using Key = std::tuple<Form, size_t, uint32_t>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const std::vector<T>>> inputs;
  const std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<const std::vector<T>>& slot = inputs[Key{form, count, seed}];
  Shared<T> input = slot.lock();
  if (!input) {
    input = std::make_shared<const std::vector<T>>(make(seeded_floats(count, seed)));
    slot = input;
  }
  return input;
}

std::vector<float> as_is(std::vector<float> values) { return values; }

}  // namespace

Shared<float> shared_floats(size_t count, uint32_t seed) {
  return shared<float>(Form::as_is, count, seed, as_is);
}

Shared<float> shared_bf16_values(size_t count, uint32_t seed) {
  return shared<float>(Form::bf16_values, count, seed, rounded_to_bf16);
}

Shared<uint16_t> shared_bf16_bits(size_t count, uint32_t seed) {
  return shared<uint16_t>(Form::bf16_bits, count, seed, to_bf16);
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

double max_error(const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& units) {
  if (got.size() != want.size() || (!units.empty() && units.size() != want.size())) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      const bool same = std::isnan(w) ? std::isnan(g) : g == w;
      if (!same) return std::numeric_limits<double>::infinity();
      continue;
    }
    // An exact output counts as no error in any unit (0 for a row of zeros).
    const double err = g == w ? 0.0 : std::fabs(g - w) / (units.empty() ? 1.0 : units[i]);
    if (std::isnan(err)) return err;
    if (err > worst) worst = err;
  }
  return worst;
}

std::vector<double> bf16_attention_units(const std::vector<double>& magnitudes,
                                         const std::vector<double>& want) {
  std::vector<double> units(want.size(), std::numeric_limits<double>::quiet_NaN());
  if (magnitudes.size() != want.size()) return units;
  for (size_t i = 0; i < units.size(); ++i) units[i] = magnitudes[i] + std::fabs(want[i]);
  return units;
}

}  // namespace posenc::cases
