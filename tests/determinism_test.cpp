// Repeating a call gives bitwise identical output at a fixed thread count,
// and (as documented in the README) across thread counts too: work is split
// into the same blocks whatever the thread count, and no reduction crosses
// threads.
#include <gtest/gtest.h>

#include <cstring>

#include "isa_test.hpp"
#include "op_runners.hpp"
#include "posenc/core.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

class Determinism : public IsaTest {};

TEST_P(Determinism, RepeatsAndThreadCountsGiveTheSameBits) {
  for (const OpRunner& runner : all_runners()) {
    SCOPED_TRACE(runner.name);
    std::vector<float> first;
    for (int threads : {1, 2, 3, 2}) {
      const Context context(Isa(GetParam()), threads);
      const std::vector<float> out = runner.run(context.get());
      if (first.empty()) {
        first = out;
        continue;
      }
      ASSERT_EQ(out.size(), first.size());
      EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)), 0)
          << "with " << threads << " threads";
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(Determinism);

}  // namespace
}  // namespace posenc::test
