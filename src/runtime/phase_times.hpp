// Where an attention call's time goes, for machines without a sampling
// profiler (`posenc bench --phases`): while enabled, each thread sums the
// clock ticks of the phases the attention marks with PhaseScope, and
// take_phase_ticks() gathers the sums. Disabled (the default), a scope
// costs one relaxed load and a branch.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace posenc {

enum class Phase : int {
  kBeforeRegion,     // the calling thread's work before the region (dry GEMMs, tables)
  kTasks,            // a thread's tasks, whole: the phases below and what they leave out
  kCopyQueries,      // q's rows copied (and widened) into the scratch
  kPackKeysValues,   // a kv head's keys and values packed for the GEMMs
  kScoresProduct,    // q k^T (GEMM or decode kernel; keys widened for it)
  kBiasLogits,       // a bias's logits for a block (its GEMMs, gathers)
  kBiasRows,         // a row's bias and mask added, and its maximum
  kSoftmax,          // exp, sums, bf16 probabilities
  kRescale,          // the accumulator (and value weights) rescaled by a new maximum
  kRelativeValues,   // Shaw's relative values: weights scattered, their GEMMs
  kValuesProduct,    // probabilities times v (GEMM or decode kernel)
  kStore,            // rows normalized, converted and written to out
  kMerge,            // split keys' partial results merged
  kCount
};
constexpr int kPhases = int(Phase::kCount);

// What the phase is, in a few words (a table row's name).
const char* phase_name(Phase phase);

// Ticks of the phase clock: the time-stamp counter on x86-64, nanoseconds
// elsewhere; and its ticks per second, measured on the first call.
uint64_t phase_clock();
double phase_clock_rate();

extern std::atomic<bool> phase_times_on;

// Switches the sums on or off for every thread (off: nothing is added).
void enable_phase_times(bool on);
void add_phase_ticks(Phase phase, uint64_t ticks);
// Every thread's sums since the last take, per phase, zeroing them. Call
// when no marked call runs.
std::array<uint64_t, kPhases> take_phase_ticks();

// Adds the ticks from its construction to end() (or its destruction) to
// the phase, where the sums are on and `wanted`.
class PhaseScope {
 public:
  explicit PhaseScope(Phase phase, bool wanted = true)
      : phase_(phase),
        timed_(wanted && phase_times_on.load(std::memory_order_relaxed)),
        start_(timed_ ? phase_clock() : 0) {}
  ~PhaseScope() { end(); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

  void end() {
    if (timed_) add_phase_ticks(phase_, phase_clock() - start_);
    timed_ = false;
  }

 private:
  Phase phase_;
  bool timed_;
  uint64_t start_;
};

}  // namespace posenc
