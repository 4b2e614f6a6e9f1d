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
struct alignas(64) ThreadSums {
  std::array<std::atomic<uint64_t>, kPhases> ticks;
  std::array<std::atomic<uint64_t>, kPhases> entries;
};

// Threads from the kRecords-th on share the last record, the one record
// whose adds are fetch_adds (add below).
constexpr int kRecords = 512;
ThreadSums records[kRecords];
std::atomic<int> records_used{0};

// The calling thread's record, and whether other threads add to it too.
struct OwnRecord {
  ThreadSums* sums;
  bool shared;
};
OwnRecord own_record() {
  thread_local int index = -1;
  if (index < 0) index = records_used.fetch_add(1);
  return {&records[std::min(index, kRecords - 1)], index >= kRecords - 1};
}

// sum += value. A record of one thread's takes a plain load and store: a
// locked add drains the store buffer, and the attention adds two a row
// (about 9% of a bf16 call on an AMX core took the sums' locked adds and
// the clock reads). take_phase_sums runs between calls (phase_times.hpp).
void add(std::atomic<uint64_t>& sum, uint64_t value, bool shared) {
  if (shared) {
    sum.fetch_add(value, std::memory_order_relaxed);
  } else {
    sum.store(sum.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
  }
}

}  // namespace

namespace detail {
std::atomic<bool> phase_times_on{false};
}  // namespace detail

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kBeforeRegion: return "before the region (calling thread)";
    case Phase::kMapToTokens: return "block: map to tokens";
    case Phase::kProjection: return "block: qkv projection";
    case Phase::kPool: return "block: 2x2 average pool";
    case Phase::kTokensToMap: return "block: tokens to map";
    case Phase::kTasks: return "tasks";
    case Phase::kCopyQueries: return "copy queries";
    case Phase::kPackKeysValues: return "pack keys and values";
    case Phase::kScoresProduct: return "scores product q k^T";
    case Phase::kBiasLogits: return "bias logits";
    case Phase::kBiasRows: return "bias rows and maximum";
    case Phase::kSoftmax: return "softmax (exp, sum, bf16)";
    case Phase::kRescale: return "rescale";
    case Phase::kRelativeValues: return "relative values";
    case Phase::kValuesProduct: return "values product p v";
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
#if defined(__x86_64__)
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
#else
  return 1e9;
#endif
}

void enable_phase_times(bool on) { detail::phase_times_on.store(on, std::memory_order_relaxed); }

void add_phase_entry(Phase phase, uint64_t ticks) {
  const OwnRecord record = own_record();
  add(record.sums->ticks[size_t(phase)], ticks, record.shared);
  add(record.sums->entries[size_t(phase)], 1, record.shared);
}

PhaseSums take_phase_sums() {
  PhaseSums sums{};
  const int used = std::min(records_used.load(), kRecords);
  for (int r = 0; r < used; ++r) {
    for (size_t p = 0; p < size_t(kPhases); ++p) {
      sums.ticks[p] += records[r].ticks[p].exchange(0, std::memory_order_relaxed);
      sums.entries[p] += records[r].entries[p].exchange(0, std::memory_order_relaxed);
    }
  }
  return sums;
}

}  // namespace posenc
