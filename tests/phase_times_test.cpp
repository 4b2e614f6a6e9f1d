// The phase sums `posenc bench --phases` prints (runtime/phase_times.hpp):
// nothing while off; while on, each phase an attention call passes through
// counted, within its threads' tasks, the first call's dry GEMMs (before the
// region, run by the calling thread) not counted in the tasks' phases.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "attention_tensors.hpp"
#include "posenc/posenc.h"
#include "runtime/phase_times.hpp"

namespace posenc::test {
namespace {

// Causal attention with a 1D relative bias, over several key blocks (the
// online softmax rescales).
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

uint64_t at(const std::array<uint64_t, kPhases>& ticks, Phase phase) {
  return ticks[size_t(phase)];
}

TEST(PhaseTimes, NothingIsCountedWhileOff) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 2, &context), POSENC_OK);
  take_phase_ticks();
  run(context, causal_relative_call(300), true);
  for (const uint64_t ticks : take_phase_ticks()) EXPECT_EQ(ticks, 0u);
  posenc_context_destroy(context);
}

TEST(PhaseTimes, EachPhaseOfACallIsCountedWithinItsTasks) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 2, &context), POSENC_OK);
  // A shape this process has not run: its first call runs its GEMMs dry.
  for (const int call : {0, 1}) {
    take_phase_ticks();
    enable_phase_times(true);
    run(context, causal_relative_call(2100), call == 1);
    enable_phase_times(false);
    const std::array<uint64_t, kPhases> ticks = take_phase_ticks();
    for (const Phase phase : {Phase::kScoresProduct, Phase::kBiasLogits, Phase::kBiasRows,
                              Phase::kSoftmax, Phase::kRescale, Phase::kValuesProduct,
                              Phase::kStore}) {
      EXPECT_GT(at(ticks, phase), 0u) << phase_name(phase) << ", call " << call;
    }
    // (The phases after kTasks run inside a task.)
    uint64_t in_tasks = 0;
    for (int p = int(Phase::kTasks) + 1; p < kPhases; ++p) in_tasks += ticks[size_t(p)];
    EXPECT_GT(at(ticks, Phase::kBeforeRegion), 0u) << "call " << call;
    EXPECT_LE(in_tasks, at(ticks, Phase::kTasks)) << "call " << call;
  }
  posenc_context_destroy(context);
}

}  // namespace
}  // namespace posenc::test
