#include "compare.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "posenc/core.h"

namespace posenc::test {
namespace {

// got_at(i) against want[i] within bound_at(i) for each i < count.
template <class Getter, class Bound>
::testing::AssertionResult compare(size_t count, const Getter& got_at,
                                   const std::vector<double>& want, const Bound& bound_at) {
  size_t bad = 0, first_bad = 0;
  double worst = 0.0;
  for (size_t i = 0; i < count; ++i) {
    const double g = got_at(i), w = want[i];
    bool ok;
    if (std::isnan(w) || std::isinf(w)) {
      ok = std::isnan(w) ? std::isnan(g) : g == w;
    } else {
      const double err = std::fabs(g - w);
      ok = err <= bound_at(i);  // false for NaN
      if (ok && err > worst) worst = err;
      if (!ok && !std::isnan(err) && err > worst) worst = err;
    }
    if (!ok && bad++ == 0) first_bad = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "max error " << worst;
  return ::testing::AssertionFailure()
         << bad << " of " << count << " values differ; first at " << first_bad << ": got "
         << got_at(first_bad) << ", want " << want[first_bad] << "; max error " << worst;
}

// atol + rtol |want[i]|.
auto tolerance(double atol, double rtol, const std::vector<double>& want) {
  return [atol, rtol, &want](size_t i) { return atol + rtol * std::fabs(want[i]); };
}

}  // namespace

::testing::AssertionResult all_close(const float* got, const std::vector<double>& want,
                                     double atol, double rtol) {
  return compare(
      want.size(), [got](size_t i) { return double(got[i]); }, want, tolerance(atol, rtol, want));
}

::testing::AssertionResult all_close_bf16(const uint16_t* got, const std::vector<double>& want,
                                          double atol, double rtol) {
  return compare(
      want.size(), [got](size_t i) { return double(posenc_bf16_to_f32(got[i])); }, want,
      tolerance(atol, rtol, want));
}

::testing::AssertionResult bf16_attention_close(const float* got, const std::vector<double>& want,
                                                const std::vector<double>& magnitudes) {
  const std::vector<double> units = cases::bf16_attention_units(magnitudes, want);
  // (Outputs below float's smallest normal may be 0: a sink far above a
  // row's logits leaves it weights of 1e-100.)
  return compare(
      want.size(), [got](size_t i) { return double(got[i]); }, want,
      [&](size_t i) { return kBf16AttentionTol * units[i] + std::numeric_limits<float>::min(); });
}

float float_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

::testing::AssertionResult fails_with(posenc_status got, posenc_status want,
                                      const char* argument) {
  if (got != want) {
    return ::testing::AssertionFailure() << "status " << posenc_status_string(got) << ", want "
                                         << posenc_status_string(want) << " ("
                                         << posenc_last_error() << ")";
  }
  if (std::string(posenc_last_error()).find(argument) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message \"" << posenc_last_error() << "\" does not name " << argument;
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> random_floats(size_t count, uint32_t seed, float low, float high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

GuardedFloats::GuardedFloats(size_t count, float fill)
    : fill_(fill), storage_(count + 2 * kGuard, fill) {}

bool GuardedFloats::guards_intact() const {
  for (size_t i = 0; i < kGuard; ++i) {
    if (storage_[i] != fill_ || storage_[storage_.size() - 1 - i] != fill_) return false;
  }
  return true;
}

bool GuardedFloats::payload_untouched() const {
  for (float v : storage_) {
    if (v != fill_) return false;
  }
  return true;
}

bool GuardedFloats::payload_untouched_from_byte(size_t byte) const {
  const auto* payload = reinterpret_cast<const unsigned char*>(storage_.data() + kGuard);
  const auto* fill = reinterpret_cast<const unsigned char*>(&fill_);
  for (size_t b = byte; b < (storage_.size() - 2 * kGuard) * sizeof(float); ++b) {
    if (payload[b] != fill[b % sizeof(float)]) return false;
  }
  return true;
}

std::vector<float> as_floats(GuardedFloats& out, size_t count, posenc_dtype out_dtype) {
  std::vector<float> result(count);
  if (out_dtype == POSENC_BF16) {
    EXPECT_TRUE(out.payload_untouched_from_byte(count * sizeof(uint16_t)))
        << "a bf16 output of " << count << " elements was written past its end";
    const auto* bits = reinterpret_cast<const uint16_t*>(out.data());
    for (size_t i = 0; i < count; ++i) result[i] = posenc_bf16_to_f32(bits[i]);
  } else {
    std::memcpy(result.data(), out.data(), count * sizeof(float));
  }
  return result;
}

}  // namespace posenc::test
