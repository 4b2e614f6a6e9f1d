// The phase sums `posenc bench --phases` prints (runtime/phase_times.hpp):
// nothing while off; while on, each phase an attention call passes through
// counted, within its threads' tasks, and the first call's dry GEMMs (before
// the region, run by the calling thread) not counted as the tasks' phases;
// the BoTNet block's steps around its attention each counted once a call.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "attention_tensors.hpp"
#include "posenc/posenc.h"
#include "runtime/phase_times.hpp"

namespace posenc::test {
namespace {

// Causal attention with a 1D relative bias, over several key blocks (the
// online softmax rescales): 2500 keys are three blocks (1024, 1024, 452).
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
    run(context, causal_relative_call(2500), call == 1);
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

// The block's steps, each once a call and within the call's wall time (the
// pool only with stride 2), around its attention's phases.
TEST(PhaseTimes, TheBottleneckBlocksStepsAreCountedOnceACall) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 2, &context), POSENC_OK);
  for (const int64_t stride : {1, 2}) {
    posenc_bottleneck_desc d;
    posenc_bottleneck_desc_init(&d, 2, 24, 6, 5, 2, 8);
    d.stride = stride;
    const int64_t tokens = d.height * d.width;
    const std::vector<float> fmap(size_t(d.batch * d.channels * tokens), 0.5f),
        w_qkv(size_t(3 * d.heads * d.head_dim * d.channels), 0.25f),
        qkv_bias(size_t(3 * d.heads * d.head_dim), 0.125f),
        rel_h(size_t((2 * d.height - 1) * d.head_dim), 0.5f),
        rel_w(size_t((2 * d.width - 1) * d.head_dim), 0.5f);
    std::vector<float> out(size_t(d.batch * d.heads * d.head_dim * tokens));
    const posenc_bottleneck_tensors t{fmap.data(),  w_qkv.data(), qkv_bias.data(),
                                      rel_h.data(), rel_w.data(), out.data()};
    take_phase_sums();
    enable_phase_times(true);
    const uint64_t start = phase_clock();
    const posenc_status status = posenc_bottleneck(context, &d, &t, nullptr, 0);
    const uint64_t wall = phase_clock() - start;
    enable_phase_times(false);
    ASSERT_EQ(status, POSENC_OK) << posenc_last_error();
    const PhaseSums sums = take_phase_sums();
    uint64_t steps = 0;
    for (const Phase phase :
         {Phase::kMapToTokens, Phase::kProjection, Phase::kPool, Phase::kTokensToMap}) {
      ASSERT_TRUE(around_attention(phase)) << phase_name(phase);
      const uint64_t expected = phase == Phase::kPool && stride == 1 ? 0 : 1;
      EXPECT_EQ(at(sums.entries, phase), expected) << phase_name(phase) << ", stride " << stride;
      steps += at(sums.ticks, phase);
    }
    EXPECT_GT(at(sums.ticks, Phase::kProjection), 0u);
    EXPECT_LE(steps + at(sums.ticks, Phase::kBeforeRegion), wall) << "stride " << stride;
    EXPECT_GT(at(sums.entries, Phase::kScoresProduct), 0u) << "stride " << stride;
  }
  posenc_context_destroy(context);
}

}  // namespace
}  // namespace posenc::test
