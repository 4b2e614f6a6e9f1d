// Cap.*: run once per compiled ISA path with POSENC_MAX_ISA set to it, and
// on x86-64 with neon (tests/CMakeLists.txt): the cap holds for posenc's kernels and for oneDNN,
// at the level the ISA table gives (runtime/compiled_isas.hpp), and it is what
// `posenc info` reports (oneDNN's ISA and matmul implementation).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <oneapi/dnnl/dnnl.h>

#include "posenc/posenc.h"
#include "runtime/compiled_isas.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

TEST(Cap, EnvironmentCapsPosencAndOnednn) {
  const char* env = std::getenv("POSENC_MAX_ISA");
  ASSERT_NE(env, nullptr) << "run with POSENC_MAX_ISA set to a path";
  posenc_isa cap = POSENC_ISA_AUTO;
  ASSERT_EQ(posenc_isa_from_name(env, &cap), POSENC_OK) << posenc_last_error();
  ASSERT_EQ(posenc_max_isa(), cap);
  EXPECT_LE(isa_rank(posenc_best_isa()), isa_rank(cap));

  // posenc: no context above the cap; oneDNN: nothing of a path above it.
  const std::string onednn_isa = onednn_isa_string();
  const std::string impl = onednn_matmul_impl(POSENC_F32);
  bool cpu_exceeds_cap = false;
  for (posenc_isa isa : kCompiledIsas) {
    if (isa_rank(isa) <= isa_rank(cap)) continue;
    posenc_context* context = nullptr;
    EXPECT_EQ(posenc_context_create(isa, 0, &context), POSENC_ERROR_UNSUPPORTED);
    EXPECT_EQ(context, nullptr);
    const std::string name = posenc_isa_name(isa);
    EXPECT_EQ(onednn_isa.find(name), std::string::npos) << onednn_isa << " under " << env;
    EXPECT_EQ(impl.find(name), std::string::npos) << impl << " under " << env;
    EXPECT_EQ(impl.find("amx"), std::string::npos) << impl << " under " << env;
    int available = 0;
    ASSERT_EQ(posenc_isa_available(isa, &available), POSENC_OK);
    cpu_exceeds_cap = cpu_exceeds_cap || available != 0;
  }

  const IsaPath* path = find_isa_path(cap);  // neon on x86-64: a row not compiled
  ASSERT_NE(path, nullptr);
#if !defined(__x86_64__)
  return;  // posenc caps oneDNN on x86-64 only
#endif
  // dnnl_cpu_isa_t values are bit sets, each level a superset of the ones below.
  const unsigned effective = unsigned(dnnl_get_effective_cpu_isa());
  EXPECT_EQ(effective & ~unsigned(path->onednn_cap), 0u) << onednn_isa << " under " << env;
  if (cpu_exceeds_cap) {
    EXPECT_EQ(effective, unsigned(path->onednn_cap)) << onednn_isa << " under " << env;
  }

  // oneDNN has made a primitive: the cap can no longer move.
  EXPECT_EQ(posenc_set_max_isa(POSENC_ISA_AUTO), POSENC_ERROR_UNSUPPORTED);
  EXPECT_EQ(posenc_max_isa(), cap);
}

// Run with POSENC_MAX_ISA=auto: the environment caps nothing, so the process
// may set oneDNN's one cap, once.
TEST(CapSetOnce, AutoInTheEnvironmentLeavesTheCapToTheFirstCall) {
  const char* env = std::getenv("POSENC_MAX_ISA");
  ASSERT_TRUE(env != nullptr && std::string(env) == "auto") << "run with POSENC_MAX_ISA=auto";
  EXPECT_EQ(posenc_max_isa(), POSENC_ISA_AUTO);
  ASSERT_EQ(posenc_set_max_isa(kBaselineIsa), POSENC_OK) << posenc_last_error();
  EXPECT_EQ(posenc_set_max_isa(kBaselineIsa), POSENC_OK);  // the cap it has: nothing to change
  EXPECT_EQ(posenc_best_isa(), kBaselineIsa);
#if defined(__x86_64__)
  EXPECT_EQ(posenc_set_max_isa(POSENC_ISA_AUTO), POSENC_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(posenc_last_error()).find("one cap per process"), std::string::npos)
      << posenc_last_error();
  EXPECT_EQ(posenc_max_isa(), kBaselineIsa);
#endif
}

// Run with POSENC_MAX_ISA=AVX2x: an unknown name caps nothing (stderr says
// so), and reading it leaves no last-error message on the calling thread.
TEST(CapUnknown, AnUnknownNameIsIgnoredWithoutALastError) {
  const char* env = std::getenv("POSENC_MAX_ISA");
  ASSERT_TRUE(env != nullptr && std::string(env) == "AVX2x") << "run with POSENC_MAX_ISA=AVX2x";
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 1, &context), POSENC_OK);
  EXPECT_EQ(std::string(posenc_last_error()), "");
  EXPECT_EQ(posenc_max_isa(), POSENC_ISA_AUTO);
  posenc_context_destroy(context);
  // The same parse as posenc_isa_from_name's, case-insensitively.
  posenc_isa isa = POSENC_ISA_AUTO;
  EXPECT_TRUE(isa_of_name("AvX2", &isa));
  EXPECT_EQ(isa, POSENC_ISA_AVX2);
  EXPECT_FALSE(isa_of_name("avx", &isa));
  EXPECT_FALSE(isa_of_name("avx22", &isa));
  EXPECT_FALSE(isa_of_name("", &isa));
  EXPECT_TRUE(isa_of_name("AUTO", &isa));
  EXPECT_EQ(isa, POSENC_ISA_AUTO);
}

}  // namespace
}  // namespace posenc::test
