// The phase sums `posenc bench --phases` prints (runtime/phase_times.hpp):
// nothing while off; while on, each phase an attention call passes through
// counted, within its threads' tasks, and the first call's dry GEMMs (before
// the region, run by the calling thread) not counted as the tasks' phases.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "attention_tensors.hpp"
#include "posenc/posenc.h"
#include "runtime/phase_times.hpp"

namespace posenc::test {
namespace {

// Causal attention with a 1D relative bias, over several key blocks (the
// online softmax rescales): 5000 keys are at least three blocks.
AttentionTensors causal_relative_call(int64_t kv_len) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, 2, kv_len, kv_len, 32);
  d.causal = 1;
  d.bias = POSENC_BIAS_RELATIVE_1D;
  AttentionTensors call(d);
  const size_t tokens = size_t(2 * kv_len * 32);
  call.fill(Tensor::q, tokens, 1);
  call.fill(Tensor::k, tokens, 2);
  call.fill(Tensor::v, tokens, 3);
  call.fill(Tensor::table, size_t(relative_rows(d) * 32), 4);
  return call;
}

uint64_t at(const std::array<uint64_t, kPhases>& sums, Phase phase) {
  return sums[size_t(phase)];
}

TEST(PhaseTimes, NothingIsCountedWhileOff) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 2, &context), POSENC_OK);
  take_phase_sums();
  run(context, causal_relative_call(300), true);
  const PhaseSums sums = take_phase_sums();
  for (int p = 0; p < kPhases; ++p) {
    EXPECT_EQ(sums.ticks[size_t(p)], 0u) << phase_name(Phase(p));
    EXPECT_EQ(sums.entries[size_t(p)], 0u) << phase_name(Phase(p));
  }
  posenc_context_destroy(context);
}

TEST(PhaseTimes, EachPhaseOfACallIsCountedWithinItsTasks) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 2, &context), POSENC_OK);
  // A shape this process has not run: its first call runs its GEMMs dry,
  // through the same code as its tasks, which must count nothing then.
  PhaseSums calls[2];
  for (const int call : {0, 1}) {
    take_phase_sums();
    enable_phase_times(true);
    run(context, causal_relative_call(5000), call == 1);
    enable_phase_times(false);
    calls[call] = take_phase_sums();
    const PhaseSums& sums = calls[call];
    for (const Phase phase : {Phase::kScoresProduct, Phase::kBiasLogits, Phase::kBiasRows,
                              Phase::kSoftmax, Phase::kRescale, Phase::kValuesProduct,
                              Phase::kStore}) {
      EXPECT_GT(at(sums.entries, phase), 0u) << phase_name(phase) << ", call " << call;
    }
    EXPECT_GT(at(sums.ticks, Phase::kScoresProduct), 0u) << "call " << call;
    EXPECT_EQ(at(sums.entries, Phase::kBeforeRegion), 1u) << "call " << call;
    uint64_t in_tasks = 0;
    for (int p = 0; p < kPhases; ++p) {
      if (inside_tasks(Phase(p))) in_tasks += sums.ticks[size_t(p)];
    }
    EXPECT_LE(in_tasks, at(sums.ticks, Phase::kTasks)) << "call " << call;
  }
  // (The packing follows how the tasks fall to the threads; a task rerun
  // after a failure counts twice. Under --gtest_repeat the first call is
  // no longer dry, and this checks less.)
  for (int p = 0; p < kPhases; ++p) {
    if (Phase(p) == Phase::kPackKeysValues) continue;
    EXPECT_EQ(calls[0].entries[size_t(p)], calls[1].entries[size_t(p)]) << phase_name(Phase(p));
  }
  posenc_context_destroy(context);
}

}  // namespace
}  // namespace posenc::test
