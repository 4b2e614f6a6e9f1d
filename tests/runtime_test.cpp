// ISA names, availability, contexts, bf16 scalars and what a thread keeps
// of a call's scratch.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "posenc/posenc.h"
#include "runtime/kernel_registry.hpp"
#include "runtime/workspace.hpp"

namespace posenc::test {
namespace {

TEST(Runtime, IsaNamesRoundTrip) {
  for (posenc_isa isa : {POSENC_ISA_AUTO, POSENC_ISA_BASELINE, POSENC_ISA_AVX2,
                         POSENC_ISA_AVX512, POSENC_ISA_NEON}) {
    posenc_isa parsed;
    ASSERT_EQ(posenc_isa_from_name(posenc_isa_name(isa), &parsed), POSENC_OK);
    EXPECT_EQ(parsed, isa);
  }
  posenc_isa parsed;
  ASSERT_EQ(posenc_isa_from_name("AVX2", &parsed), POSENC_OK);
  EXPECT_EQ(parsed, POSENC_ISA_AVX2);
  EXPECT_EQ(posenc_isa_name(posenc_isa(99)), nullptr);
}

TEST(Runtime, BestIsaIsAvailableAndHasKernels) {
  const posenc_isa best = posenc_best_isa();
  int available = 0;
  ASSERT_EQ(posenc_isa_available(best, &available), POSENC_OK);
  EXPECT_EQ(available, 1);
  EXPECT_NE(compiled_kernel_table(best), nullptr);
  EXPECT_EQ(posenc_context_isa(nullptr), best);
}

TEST(Runtime, ContextKeepsItsPathAndThreads) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 3, &context), POSENC_OK);
  EXPECT_EQ(posenc_context_isa(context), posenc_best_isa());
  EXPECT_EQ(posenc_context_num_threads(context), 3);
  posenc_context_destroy(context);
  posenc_context_destroy(nullptr);
}

TEST(Runtime, UnavailablePathIsRefused) {
#if defined(__x86_64__)
  posenc_context* context = nullptr;
  EXPECT_EQ(posenc_context_create(POSENC_ISA_NEON, 0, &context), POSENC_ERROR_UNSUPPORTED);
  EXPECT_EQ(context, nullptr);
#else
  GTEST_SKIP() << "every compiled path runs on aarch64";
#endif
}

TEST(Runtime, Bf16Conversions) {
  EXPECT_EQ(posenc_f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(posenc_bf16_to_f32(0x3F80), 1.0f);
  // 1 + 2^-8 is halfway between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(posenc_f32_to_bf16(1.0f + 1.0f / 256), 0x3F80);
  EXPECT_EQ(posenc_f32_to_bf16(1.0f + 3.0f / 256), 0x3F82);
  EXPECT_TRUE(std::isnan(posenc_bf16_to_f32(
      posenc_f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(posenc_bf16_to_f32(posenc_f32_to_bf16(std::numeric_limits<float>::infinity())),
            std::numeric_limits<float>::infinity());
}

struct ScratchTestTag;

// A call's scratch within kept_buffer_limit is kept by the thread and
// reused; past it the call's own, of which the thread keeps nothing (a 2D
// sinusoid table's 320 MiB column table, a T5 bias's gigabyte of lines,
// were kept for the thread's life).
TEST(Runtime, ScratchPastTheKeptLimitIsTheCallsOwn) {
  const size_t limit = kept_buffer_limit(1);
  const uint8_t* kept = nullptr;
  {
    const CallScratch<uint8_t, ScratchTestTag> small(1000, 1);
    kept = small.get();
  }
  EXPECT_GE(kept_buffer<ScratchTestTag>().bytes, 1000u);
  {
    const CallScratch<uint8_t, ScratchTestTag> outsized(limit + 1, 1);
    EXPECT_NE(outsized.get(), kept);
  }
  EXPECT_LT(kept_buffer<ScratchTestTag>().bytes, limit);
  const CallScratch<uint8_t, ScratchTestTag> again(1000, 1);
  EXPECT_EQ(again.get(), kept);
  // More threads keep more: 16 MiB each past 16 threads.
  EXPECT_EQ(kept_buffer_limit(64), size_t(64) << 24);
}

}  // namespace
}  // namespace posenc::test
