#include "isa_test.hpp"

#include "runtime/kernel_registry.hpp"

namespace posenc::test {

std::string isa_param_name(const ::testing::TestParamInfo<posenc_isa>& info) {
  return posenc_isa_name(info.param);
}

void IsaTest::SetUp() {
  int available = 0;
  ASSERT_EQ(posenc_isa_available(GetParam(), &available), POSENC_OK);
  if (!available) GTEST_SKIP() << "this CPU has no " << posenc_isa_name(GetParam()) << " path";
  const posenc_status status = posenc_context_create(GetParam(), 0, &context_);
  if (status == POSENC_ERROR_UNSUPPORTED) GTEST_SKIP() << posenc_last_error();
  ASSERT_EQ(status, POSENC_OK) << posenc_last_error();
  ASSERT_EQ(posenc_context_isa(context_), GetParam());
}

const KernelTable& IsaTest::kernels() const { return *compiled_kernel_table(GetParam()); }

void IsaTest::TearDown() { posenc_context_destroy(context_); }

}  // namespace posenc::test
