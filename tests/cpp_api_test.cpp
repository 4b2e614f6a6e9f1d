// The C++ layer: exceptions carry the C ABI's status and message.
#include <gtest/gtest.h>

#include <vector>

#include "posenc/posenc.hpp"

namespace posenc::test {
namespace {

TEST(CppApi, ThrowsWithStatusAndMessage) {
  posenc::Context context;
  std::vector<float> out(8);
  try {
    posenc::sinusoid_table(context, 2, 0, out.data());
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("dim"), std::string::npos);
  }
}

TEST(CppApi, ContextsAndOps) {
  posenc::Context context(posenc::Isa::automatic, 2);
  EXPECT_EQ(context.isa(), posenc::best_isa());
  EXPECT_EQ(context.num_threads(), 2);
  posenc::Context moved = std::move(context);
  std::vector<float> x(3 * 4, 1.0f), out(x.size());
  posenc::add_sinusoid(moved, 1, 3, 4, x.data(), out.data());
  EXPECT_FLOAT_EQ(out[0], 1.0f);   // sin(0) + 1
  EXPECT_FLOAT_EQ(out[1], 2.0f);   // cos(0) + 1
  EXPECT_THROW(posenc::Context(posenc::Isa(77)), posenc::Error);
}

}  // namespace
}  // namespace posenc::test
