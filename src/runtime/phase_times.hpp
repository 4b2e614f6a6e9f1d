// Where an attention call's time goes, for machines without a sampling
// profiler (`posenc bench --phases`): while switched on, each thread sums
// the clock ticks and the entries of the phases the attention (and an op
// around it) marks with PhaseScope, and take_phase_sums() gathers them.
// Off (the default), a scope costs one relaxed load and a branch. Switch
// between calls only: a call running across the switch counts some phases
// of its tasks and not others.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace posenc {

enum class Phase : int {
  kBeforeRegion,     // the calling thread's work before the region (dry GEMMs, tables)
  // The steps of an op around its attention (the BoTNet block), each timed
  // on the calling thread across the regions it runs on all the threads.
  kMapToTokens,      // the NCHW map made token-major (bf16 inputs widened)
  kProjection,       // the 1x1 qkv projection (oneDNN) and its bias
  kPool,             // the 2x2 average pool of a stride-2 block
  kTokensToMap,      // the output made NCHW
  kTasks,            // a thread's tasks, whole: the phases below and what they leave out
  kCopyQueries,      // q's rows copied (and widened) into the scratch
  kPackKeysValues,   // a kv head's keys and values packed for the GEMMs
  kScoresProduct,    // q k^T (GEMM or decode kernel; keys widened for it)
  kBiasLogits,       // a bias's logits for a block (its GEMMs, gathers)
  kBiasRows,         // a row's bias and mask added, and its maximum
  kSoftmax,          // exp, sums, bf16 probabilities (not relative values')
  kRescale,          // the accumulator (and value weights) rescaled by a new maximum
  kRelativeValues,   // Shaw's relative values: weights scattered, bf16 probabilities
                     // rounded after them, their GEMMs
  kValuesProduct,    // probabilities times v (GEMM or decode kernel)
  kStore,            // rows normalized, converted and written to out
  kMerge,            // split keys' partial results merged
  kCount
};
constexpr int kPhases = int(Phase::kCount);

// Whether the phase runs inside a task (within Phase::kTasks): the phases
// listed after it.
constexpr bool inside_tasks(Phase phase) { return int(phase) > int(Phase::kTasks); }
static_assert(!inside_tasks(Phase::kBeforeRegion) && inside_tasks(Phase::kCopyQueries),
              "the phases inside a task follow kTasks");

// Whether the phase is a step of an op around its attention: its ticks
// are a wall time that holds all the call's threads.
constexpr bool around_attention(Phase phase) {
  return int(phase) > int(Phase::kBeforeRegion) && int(phase) < int(Phase::kTasks);
}

// What the phase is, in a few words (a table row's name).
const char* phase_name(Phase phase);

// Ticks of the phase clock: the time-stamp counter on x86-64, nanoseconds
// elsewhere; and its ticks per second (measured once on x86-64).
uint64_t phase_clock();
double phase_clock_rate();

namespace detail {
extern std::atomic<bool> phase_times_on;
}  // namespace detail

// Switches the sums on or off for every thread (off: nothing is added).
void enable_phase_times(bool on);
inline bool phase_times_enabled() {
  return detail::phase_times_on.load(std::memory_order_relaxed);
}
// One entry of `phase` that lasted `ticks`, on the calling thread.
void add_phase_entry(Phase phase, uint64_t ticks);

struct PhaseSums {
  std::array<uint64_t, kPhases> ticks;    // summed over the threads
  std::array<uint64_t, kPhases> entries;  // the scopes that added them
};
// Every thread's sums since the last take, zeroing them. Between calls
// only: a thread's adds to its own sums are not atomic with the take.
PhaseSums take_phase_sums();

// Adds the ticks from its construction to end() (or its destruction) to
// the phase, where `timed`: by default whether the sums are on; a caller
// marking many scopes reads that once (phase_times_enabled) and passes it.
class PhaseScope {
 public:
  explicit PhaseScope(Phase phase) : PhaseScope(phase, phase_times_enabled()) {}
  PhaseScope(Phase phase, bool timed)
      : phase_(phase), timed_(timed), start_(timed ? phase_clock() : 0) {}
  ~PhaseScope() { end(); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

  void end() {
    if (!timed_) return;
    timed_ = false;
    // A thread moved to a core whose counter runs behind (some VMs, other
    // sockets) reads a smaller value: that entry counts no time.
    const int64_t ticks = int64_t(phase_clock() - start_);
    add_phase_entry(phase_, ticks > 0 ? uint64_t(ticks) : 0);
  }

 private:
  Phase phase_;
  bool timed_;
  uint64_t start_;
};

}  // namespace posenc
