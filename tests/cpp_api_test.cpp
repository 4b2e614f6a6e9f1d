// The C++ layer: exceptions carry the C ABI's status and message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
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

// The wrappers of the C ABI's small functions return what the C calls do.
TEST(CppApi, VersionNamesAndBf16Conversions) {
  EXPECT_STREQ(posenc::version(), posenc_version());
  EXPECT_STREQ(posenc::status_string(POSENC_ERROR_OVERFLOW), "size overflow");
  EXPECT_EQ(posenc::isa_from_name("AVX2"), posenc::Isa::avx2);
  EXPECT_EQ(posenc::isa_from_name("baseline"), posenc::Isa::baseline);
  try {
    posenc::isa_from_name("sse9");
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("sse9"), std::string::npos);
  }
  // The C function would stop at the NUL and read "avx2".
  try {
    posenc::isa_from_name(std::string("avx2\0junk", 9));
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "posenc::isa_from_name: name holds a NUL");
  }
  // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7: even is 1.
  EXPECT_EQ(posenc::f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(posenc::f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(posenc::bf16_to_f32(0xC040), -3.0f);
  EXPECT_TRUE(std::isnan(posenc::bf16_to_f32(posenc::f32_to_bf16(std::nanf("")))));
}

// Worked from RoPE's definition: w_j = base^(-2j / rotary_dim), divided by
// the factor under linear scaling; YaRN's default attention factor is
// 0.1 ln(s) + 1.
TEST(CppApi, RopeFrequenciesAndACachesConfig) {
  posenc_rope_config config = posenc::rope_config(8);
  posenc::RopeFrequencies f = posenc::rope_frequencies(config);
  ASSERT_EQ(f.inverse_frequencies.size(), 4u);
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(f.inverse_frequencies[size_t(j)], std::pow(10.0, -j), 1e-15) << j;
  }
  EXPECT_EQ(f.attention_factor, 1.0);
  config.scaling = POSENC_ROPE_SCALING_LINEAR;
  config.factor = 4.0;
  f = posenc::rope_frequencies(config);
  EXPECT_NEAR(f.inverse_frequencies[1], 0.025, 1e-15);

  posenc_rope_config yarn = posenc::rope_config(8);
  yarn.scaling = POSENC_ROPE_SCALING_YARN;
  yarn.factor = 4.0;
  yarn.original_max_positions = 1024;
  EXPECT_NEAR(posenc::rope_frequencies(yarn).attention_factor, 0.1 * std::log(4.0) + 1.0, 1e-12);

  for (int64_t rotary_dim : {int64_t(0), int64_t(7), int64_t(1) << 40}) {
    posenc_rope_config bad = config;
    bad.rotary_dim = rotary_dim;
    try {
      posenc::rope_frequencies(bad);
      FAIL() << "expected posenc::Error for rotary_dim " << rotary_dim;
    } catch (const posenc::Error& e) {
      EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("rotary_dim"), std::string::npos);
    }
  }

  const posenc::Context context;
  posenc::RopeCache cache(context, config, 16);
  const posenc_rope_config kept = cache.config();
  EXPECT_EQ(kept.rotary_dim, 8);
  EXPECT_EQ(kept.scaling, POSENC_ROPE_SCALING_LINEAR);
  EXPECT_EQ(kept.factor, 4.0);
  posenc::RopeCache moved = std::move(cache);
  EXPECT_THROW(cache.config(), posenc::Error);
}

// Whether an allocation of exabytes fails with std::bad_alloc: the
// sanitizers' allocators end the process instead unless told otherwise.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kHugeAllocationsThrow = false;
#elif defined(__has_feature)
constexpr bool kHugeAllocationsThrow =
    !__has_feature(address_sanitizer) && !__has_feature(thread_sanitizer);
#else
constexpr bool kHugeAllocationsThrow = true;
#endif

// A size the wrapper cannot allocate is a posenc::Error, as every failure;
// one whose bytes overflow int64 is the OVERFLOW the C function gives it.
TEST(CppApi, AllocationFailuresArePosencErrors) {
  std::vector<std::pair<int64_t, posenc_status>> cases = {
      {int64_t(1) << 62, POSENC_ERROR_OVERFLOW}, {INT64_MAX, POSENC_ERROR_OVERFLOW}};
  if (kHugeAllocationsThrow) cases.push_back({int64_t(1) << 60, POSENC_ERROR_OUT_OF_MEMORY});
  for (auto [heads, status] : cases) {
    try {
      posenc::alibi_slopes(heads);
      FAIL() << "expected posenc::Error for " << heads << " heads";
    } catch (const posenc::Error& e) {
      EXPECT_EQ(e.status(), status) << heads;
      EXPECT_EQ(std::string(e.what()).rfind("posenc::alibi_slopes: slopes: ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(posenc_alibi_slopes(int64_t(1) << 62, nullptr), POSENC_ERROR_OVERFLOW);
}

}  // namespace
}  // namespace posenc::test
