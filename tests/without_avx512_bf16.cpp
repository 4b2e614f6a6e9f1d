// POSENC_TEST_WITHOUT_AVX512_BF16=1 runs the suite as an AVX-512 CPU without
// AVX512-BF16 (Skylake to Ice Lake) would, on one that has it: posenc's
// AVX-512 path takes its plain kernel table, and oneDNN, capped at
// avx512_core, multiplies no bf16 in hardware, so the bf16 attention and
// bottleneck widen to fp32 GEMMs. No CI machine lacks AVX512-BF16 alone, so
// without this those kernels ran only one at a time (scripts/test.sh). On a
// CPU without AVX512-BF16 there is nothing to hide: every test is skipped.
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <cstring>

#include "runtime/cpu_features.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

class WithoutAvx512Bf16 : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!cpu_has(kCpuAvx512Bf16)) GTEST_SKIP() << "this CPU has no AVX512-BF16 to hide";
    ASSERT_TRUE(cpu_supports(POSENC_ISA_AVX512)) << "this CPU has no AVX-512 path";
    hide_cpu_features(kCpuAvx512Bf16);
    ASSERT_EQ(dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx512_core), dnnl_success)
        << "oneDNN made a primitive before the tests";
    ASSERT_EQ(kernel_table_for_cpu(POSENC_ISA_AVX512), compiled_kernel_table(POSENC_ISA_AVX512));
    ASSERT_FALSE(onednn_bf16_gemm_is_native());
    ASSERT_FALSE(bf16_gemms_outpace_fp32());
  }
};

[[maybe_unused]] const ::testing::Environment* const registered = [] {
  const char* asked = std::getenv("POSENC_TEST_WITHOUT_AVX512_BF16");
  const bool hide = asked != nullptr && std::strcmp(asked, "1") == 0;
  return hide ? ::testing::AddGlobalTestEnvironment(new WithoutAvx512Bf16) : nullptr;
}();

}  // namespace
}  // namespace posenc::test
