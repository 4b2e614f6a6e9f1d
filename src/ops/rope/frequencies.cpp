#include "ops/rope/frequencies.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "ops/absolute/frequencies.hpp"
#include "runtime/math_constants.hpp"
#include "runtime/thread_state.hpp"

namespace posenc::ops {
namespace {

// s L / L0 - (s - 1) written as 1 + s (L - L0) / L0: exactly 1 at L = L0
// (L - L0 is exact), where the first form cancels to 0 for s >= 2^53.
std::vector<double> dynamic_ntk(const posenc_rope_config& c, int64_t dim) {
  const int64_t length = std::max(c.sequence_length, c.original_max_positions);
  const double context = double(c.original_max_positions);
  const double ratio = 1.0 + c.factor * (double(length) - context) / context;
  const double base = c.base * std::pow(ratio, double(dim) / double(dim - 2));
  return inverse_frequencies(dim, base);
}

// The (fractional) pair index whose frequency turns `rotations` times over
// the original context: log(context / (rotations 2 pi)) as transformers
// computes it, or as a difference of logs where that quotient overflows or
// underflows (betas near 0 or DBL_MAX, which validation takes), so that the
// index stays finite rather than making the ramp NaN.
double yarn_correction_dim(double rotations, int64_t dim, double base, double context) {
  const double quotient = context / (rotations * kTwoPi);
  const double log_quotient = std::isfinite(quotient) && quotient > 0.0
                                  ? std::log(quotient)
                                  : std::log(context) - std::log(rotations) - std::log(kTwoPi);
  return double(dim) * log_quotient / (2.0 * std::log(base));
}

std::vector<double> yarn(const posenc_rope_config& c, int64_t dim) {
  std::vector<double> freqs = inverse_frequencies(dim, c.base);
  const double context = double(c.original_max_positions);
  double low = yarn_correction_dim(c.beta_fast, dim, c.base, context);
  double high = yarn_correction_dim(c.beta_slow, dim, c.base, context);
  if (!c.fractional_correction_range) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (high == low) high += 0.001;
  for (size_t j = 0; j < freqs.size(); ++j) {
    const double ramp = std::clamp((double(j) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = (1.0 - ramp) * c.extrapolation_factor;
    freqs[j] = (1.0 - extrapolation) * freqs[j] / c.factor + extrapolation * freqs[j];
  }
  return freqs;
}

std::vector<double> llama3(const posenc_rope_config& c, int64_t dim) {
  std::vector<double> freqs = inverse_frequencies(dim, c.base);
  const double context = double(c.original_max_positions);
  const double high_wavelength = context / c.high_freq_factor;
  const double low_wavelength = context / c.low_freq_factor;
  for (double& w : freqs) {
    const double wavelength = kTwoPi / w;
    if (wavelength > low_wavelength) {
      w /= c.factor;
    } else if (wavelength >= high_wavelength) {
      const double smooth = (context / wavelength - c.low_freq_factor) /
                            (c.high_freq_factor - c.low_freq_factor);
      w = (1.0 - smooth) * w / c.factor + smooth * w;
    }
  }
  return freqs;
}

}  // namespace

RopeAngles rope_angles(const posenc_rope_config& config) {
  const int64_t dim = config.grid_width > 0 ? config.rotary_dim / 2 : config.rotary_dim;
  RopeAngles angles{config, {}, 1.0};
  switch (config.scaling) {
    case POSENC_ROPE_SCALING_NONE:
      angles.axis_inv_freq = inverse_frequencies(dim, config.base);
      break;
    case POSENC_ROPE_SCALING_LINEAR:
      angles.axis_inv_freq = inverse_frequencies(dim, config.base);
      for (double& w : angles.axis_inv_freq) w /= config.factor;
      break;
    case POSENC_ROPE_SCALING_DYNAMIC_NTK:
      angles.axis_inv_freq = dynamic_ntk(config, dim);
      break;
    case POSENC_ROPE_SCALING_YARN:
      angles.axis_inv_freq = yarn(config, dim);
      if (config.attention_factor > 0.0) {
        angles.attention_factor = config.attention_factor;
      } else if (config.factor > 1.0 && config.extrapolation_factor > 0.0) {
        // Without extrapolation llama.cpp leaves the magnitude alone.
        angles.attention_factor = 0.1 * std::log(config.factor) + 1.0;
      }
      break;
    case POSENC_ROPE_SCALING_LLAMA3:
      angles.axis_inv_freq = llama3(config, dim);
      break;
    case POSENC_ROPE_SCALING_MAX_ENUM:  // refused by the API's validation
      break;
  }
  return angles;
}

namespace {

// Field by field (the struct has padding); doubles by their bits.
bool same_config(const posenc_rope_config& a, const posenc_rope_config& b) {
  auto same = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  return a.rotary_dim == b.rotary_dim && a.pairing == b.pairing && same(a.base, b.base) &&
         a.grid_width == b.grid_width && a.scaling == b.scaling && same(a.factor, b.factor) &&
         a.original_max_positions == b.original_max_positions &&
         a.sequence_length == b.sequence_length &&
         same(a.extrapolation_factor, b.extrapolation_factor) &&
         same(a.attention_factor, b.attention_factor) && same(a.beta_fast, b.beta_fast) &&
         same(a.beta_slow, b.beta_slow) && same(a.low_freq_factor, b.low_freq_factor) &&
         same(a.high_freq_factor, b.high_freq_factor) &&
         a.fractional_correction_range == b.fractional_correction_range &&
         a.column_first == b.column_first;
}

// The calling thread's angles of its last config.
std::optional<RopeAngles>& last_angles() { return thread_state_part<std::optional<RopeAngles>>(); }

}  // namespace

const RopeAngles& thread_rope_angles(const posenc_rope_config& config) {
  std::optional<RopeAngles>& last = last_angles();
  if (!last || !same_config(last->config, config)) {
    last.reset();  // a failed rope_angles leaves none
    last = rope_angles(config);
  }
  return *last;
}

void release_thread_rope_angles() { last_angles().reset(); }

}  // namespace posenc::ops
