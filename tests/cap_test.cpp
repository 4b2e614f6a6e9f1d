// Run with POSENC_MAX_ISA=avx2 (tests/CMakeLists.txt): the cap holds for
// posenc's kernels and for oneDNN.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "posenc/posenc.h"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

TEST(Cap, EnvironmentCapsPosencAndOnednn) {
  ASSERT_EQ(posenc_max_isa(), POSENC_ISA_AVX2);
  EXPECT_NE(posenc_best_isa(), POSENC_ISA_AVX512);
  posenc_context* context = nullptr;
  EXPECT_EQ(posenc_context_create(POSENC_ISA_AVX512, 0, &context), POSENC_ERROR_UNSUPPORTED);
  EXPECT_EQ(context, nullptr);

  const std::string onednn_isa = onednn_isa_string();
  EXPECT_TRUE(onednn_isa == "avx2" || onednn_isa == "avx" || onednn_isa == "sse41")
      << onednn_isa;
  const std::string impl = onednn_matmul_impl(POSENC_F32);
  EXPECT_EQ(impl.find("avx512"), std::string::npos) << impl;
  EXPECT_EQ(impl.find("amx"), std::string::npos) << impl;

  // oneDNN has made a primitive: the cap can no longer move.
  EXPECT_EQ(posenc_set_max_isa(POSENC_ISA_BASELINE), POSENC_ERROR_UNSUPPORTED);
  EXPECT_EQ(posenc_max_isa(), POSENC_ISA_AVX2);
}

}  // namespace
}  // namespace posenc::test
