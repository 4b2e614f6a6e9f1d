// POSENC_TEST_BF16_GEMMS=1 runs the suite with the attention's GEMMs in
// bf16 wherever oneDNN multiplies bf16 in hardware (runtime/matmul.hpp's
// force_bf16_gemms): on Intel's AVX512-BF16 without AMX, which widens bf16
// to fp32 GEMMs by default, the bf16 GEMMs' paths (padded score rows,
// bf16 probabilities, packed bf16 blocks, the bf16 bottleneck) are tested
// too (scripts/test.sh). Where they already run, or oneDNN has no bf16 in
// hardware, every test is skipped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

class WithBf16Gemms : public ::testing::Environment {
 public:
  void SetUp() override {
    if (bf16_gemms_outpace_fp32() || !onednn_bf16_gemm_is_native()) {
      GTEST_SKIP() << "the attention's GEMMs run in bf16 here already, or cannot";
    }
    force_bf16_gemms();
    ASSERT_TRUE(bf16_gemms_outpace_fp32());
  }
};

[[maybe_unused]] const ::testing::Environment* const registered = [] {
  const char* asked = std::getenv("POSENC_TEST_BF16_GEMMS");
  const bool force = asked != nullptr && std::strcmp(asked, "1") == 0;
  return force ? ::testing::AddGlobalTestEnvironment(new WithBf16Gemms) : nullptr;
}();

}  // namespace
}  // namespace posenc::test
