// The C++ layer: exceptions carry the C ABI's status and message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
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

// The bf16 tables' wrappers pass every argument through: the same bits as the
// C ABI's (tested against the reference loops) for a layout and base of their own.
TEST(CppApi, Bf16SinusoidTables) {
  const posenc::Context context;
  const posenc::Sinusoid sinusoid{100.0, posenc::SinCosLayout::split};
  std::vector<uint16_t> wrapped(5 * 3 * 12), direct(wrapped.size(), 0xFFFF);
  posenc::sinusoid_table_2d_bf16(context, 5, 3, 12, wrapped.data(), sinusoid);
  ASSERT_EQ(posenc_sinusoid_table_2d(context.get(), 5, 3, 12, 100.0, POSENC_SINCOS_SPLIT,
                                     POSENC_BF16, direct.data()),
            POSENC_OK);
  EXPECT_EQ(wrapped, direct);
  posenc::sinusoid_table_bf16(context, 7, 12, wrapped.data(), 3, sinusoid);
  ASSERT_EQ(posenc_sinusoid_table(context.get(), 7, 12, 3, 100.0, POSENC_SINCOS_SPLIT, POSENC_BF16,
                                  direct.data()),
            POSENC_OK);
  EXPECT_TRUE(std::equal(direct.begin(), direct.begin() + 7 * 12, wrapped.begin()));
  EXPECT_THROW(posenc::sinusoid_table_2d_bf16(context, 5, 3, 11, wrapped.data()), posenc::Error);
}

// A moved-from Context is the default one, a moved-from RopeCache holds
// none; move assignment releases what the target held.
TEST(CppApi, MovedFromContextsAndCachesAreEmpty) {
  posenc::Context a(posenc::Isa::automatic, 1);
  posenc::Context b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(b.num_threads(), 1);
  posenc::Context c(posenc::Isa::automatic, 2);
  c = std::move(b);
  EXPECT_EQ(b.get(), nullptr);
  EXPECT_EQ(c.num_threads(), 1);

  const posenc_rope_config config = posenc::rope_config(4);
  posenc::RopeCache first(c, config, 8);
  posenc::RopeCache second(c, config, 16);
  second = std::move(first);
  EXPECT_EQ(first.get(), nullptr);
  EXPECT_EQ(second.max_positions(), 8);
  std::vector<float> x(4, 1.0f), out(4);
  EXPECT_THROW(posenc::rope(c, first, posenc::RopeLayout::bthd, 1, 1, 1, 4, x.data(),
                            out.data()),
               posenc::Error);
}

// What would dangle does not compile: a source kept from a temporary cache.
// A source keeps its config by value (and a workspace a context of its own:
// attention_test.cpp).
TEST(CppApi, NothingKeptFromTemporaries) {
  static_assert(!std::is_constructible_v<posenc::RopeSource, posenc::RopeCache&&>);
  static_assert(std::is_constructible_v<posenc::RopeSource, const posenc::RopeCache&>);
  const posenc::RopeSource kept = posenc::rope_config(4, posenc::RopePairing::interleaved);
  const posenc::Context context;
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f}, kept_out(8), out(8);
  posenc::rope(context, kept, posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(), kept_out.data());
  posenc::rope(context, posenc::rope_config(4, posenc::RopePairing::interleaved),
               posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(), out.data());
  EXPECT_EQ(kept_out, out);
}

// A size the wrapper cannot allocate is a posenc::Error, as every failure.
TEST(CppApi, AllocationFailuresArePosencErrors) {
  try {
    posenc::alibi_slopes(int64_t(1) << 62);
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_OUT_OF_MEMORY);
    EXPECT_NE(std::string(e.what()).find("slopes"), std::string::npos);
  }
}

}  // namespace
}  // namespace posenc::test
