// Parameterizing tests over every ISA path of the build: a test suite derived
// from IsaTest runs once per path, with a context pinned to that path, and is
// skipped (visibly) where the CPU lacks the path or the cap forbids it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "posenc/posenc.h"
#include "runtime/compiled_isas.hpp"

namespace posenc {
struct KernelTable;
}

namespace posenc::test {

std::string isa_param_name(const ::testing::TestParamInfo<posenc_isa>& info);

class IsaTest : public ::testing::TestWithParam<posenc_isa> {
 protected:
  void SetUp() override;
  void TearDown() override;
  posenc_context* context() const { return context_; }
  // The path's compiled kernel table, for tests of single kernels.
  const KernelTable& kernels() const;

 private:
  posenc_context* context_ = nullptr;
};

}  // namespace posenc::test

#define POSENC_INSTANTIATE_ISA_TESTS(suite)                                              \
  INSTANTIATE_TEST_SUITE_P(Isa, suite, ::testing::ValuesIn(::posenc::kCompiledIsas), \
                           ::posenc::test::isa_param_name)
