#include "runtime/phase_times.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace posenc {
namespace {

// One thread's sums, on cache lines of its own.
struct alignas(64) ThreadTicks {
  std::array<std::atomic<uint64_t>, kPhases> ticks;
};

// Threads past kRecords share the last record (fetch_add keeps it exact).
constexpr int kRecords = 512;
ThreadTicks records[kRecords];
std::atomic<int> records_used{0};

ThreadTicks& own_record() {
  thread_local int index = -1;
  if (index < 0) index = std::min(records_used.fetch_add(1), kRecords - 1);
  return records[index];
}

}  // namespace

std::atomic<bool> phase_times_on{false};

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kBeforeRegion: return "before the region (calling thread)";
    case Phase::kTasks: return "tasks";
    case Phase::kCopyQueries: return "copy queries";
    case Phase::kPackKeysValues: return "pack keys and values";
    case Phase::kScoresProduct: return "scores product";
    case Phase::kBiasLogits: return "bias logits";
    case Phase::kBiasRows: return "bias rows and maximum";
    case Phase::kSoftmax: return "softmax (exp, sum, bf16)";
    case Phase::kRescale: return "rescale";
    case Phase::kRelativeValues: return "relative values";
    case Phase::kValuesProduct: return "values product";
    case Phase::kStore: return "store";
    case Phase::kMerge: return "merge split keys";
    case Phase::kCount: break;
  }
  return "?";
}

uint64_t phase_clock() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
#endif
}

double phase_clock_rate() {
  static const double rate = [] {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const uint64_t c0 = phase_clock();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t c1 = phase_clock();
    const std::chrono::duration<double> seconds = clock::now() - t0;
    return double(c1 - c0) / seconds.count();
  }();
  return rate;
}

void enable_phase_times(bool on) { phase_times_on.store(on, std::memory_order_relaxed); }

void add_phase_ticks(Phase phase, uint64_t ticks) {
  own_record().ticks[size_t(phase)].fetch_add(ticks, std::memory_order_relaxed);
}

std::array<uint64_t, kPhases> take_phase_ticks() {
  std::array<uint64_t, kPhases> sums{};
  const int used = std::min(records_used.load(), kRecords);
  for (int r = 0; r < used; ++r) {
    for (int p = 0; p < kPhases; ++p) {
      sums[size_t(p)] += records[r].ticks[size_t(p)].exchange(0, std::memory_order_relaxed);
    }
  }
  return sums;
}

}  // namespace posenc
