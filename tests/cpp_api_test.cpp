// The C++ layer: exceptions carry the C ABI's status and message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "compare.hpp"
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

// The other wrappers pass every argument through, options included: the
// same results as the C calls (tested against the reference loops) on
// arguments of their own.
TEST(CppApi, WrappersPassEveryArgument) {
  const posenc::Context context;
  const posenc::Sinusoid sinusoid{100.0, posenc::SinCosLayout::split};
  const std::vector<float> x = random_floats(2 * 3 * 4, 1), table = random_floats(5 * 4, 2);
  std::vector<float> wrapped(2 * 3 * 10), direct(wrapped.size());
  auto same = [&](size_t count) {
    return std::equal(direct.begin(), direct.begin() + count, wrapped.begin());
  };

  posenc::sinusoid_table_2d(context, 3, 2, 8, wrapped.data(), sinusoid);
  ASSERT_EQ(posenc_sinusoid_table_2d(context.get(), 3, 2, 8, 100.0, POSENC_SINCOS_SPLIT, POSENC_F32,
                                     direct.data()),
            POSENC_OK);
  EXPECT_TRUE(same(3 * 2 * 8));
  posenc::add_learned(context, 2, 3, 4, table.data(), 5, x.data(), wrapped.data(), 2);
  ASSERT_EQ(posenc_add_learned(context.get(), 2, 3, 4, 2, table.data(), 5, x.data(), direct.data()),
            POSENC_OK);
  EXPECT_TRUE(same(2 * 3 * 4));
  posenc::concat_sinusoid(context, 2, 3, 4, 6, x.data(), wrapped.data(), 7, sinusoid);
  ASSERT_EQ(posenc_concat_sinusoid(context.get(), 2, 3, 4, 6, 7, 100.0, POSENC_SINCOS_SPLIT,
                                   x.data(), direct.data()),
            POSENC_OK);
  EXPECT_TRUE(same(2 * 3 * 10));

  posenc_position_bias_desc bias = posenc::position_bias_desc(POSENC_POSITION_BIAS_T5, 4, 3, 5);
  bias.num_buckets = 5;
  bias.max_distance = 4;
  bias.bidirectional = 0;
  bias.query_offset = 2;
  posenc::position_bias(context, bias, table.data(), wrapped.data());
  ASSERT_EQ(posenc_position_bias(context.get(), &bias, table.data(), direct.data()), POSENC_OK);
  EXPECT_TRUE(same(4 * 3 * 5));

  // bf16 q and k, 2 and 1 heads, positions from int64 ids.
  const posenc_rope_config config = posenc::rope_config(4, posenc::RopePairing::interleaved, 50.0);
  const std::vector<int64_t> ids = {9, 2, 40};
  std::vector<uint16_t> q(3 * 2 * 4), k(3 * 1 * 4), got(q.size() + k.size()), want(got.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = posenc::f32_to_bf16(x[i]);
  for (size_t i = 0; i < k.size(); ++i) k[i] = posenc::f32_to_bf16(table[i]);
  posenc::rope_qk(context, config, posenc::RopeLayout::bthd, 1, 3, 2, 1, 4, q.data(), got.data(),
                  k.data(), got.data() + q.size(), posenc::rope_ids(ids.data()));
  const posenc_rope_positions positions{0, ids.data(), POSENC_ROPE_POSITIONS_INT64};
  ASSERT_EQ(
      posenc_rope_qk(context.get(), &config, nullptr, &positions, POSENC_ROPE_BTHD, POSENC_BF16, 1,
                     3, 2, 1, 4, q.data(), want.data(), k.data(), want.data() + q.size()),
      POSENC_OK);
  EXPECT_EQ(got, want);

  EXPECT_STREQ(posenc::isa_name(posenc::Isa::avx2), posenc_isa_name(POSENC_ISA_AVX2));
  posenc::release_thread_memory();  // and a call after it runs as before
  posenc::sinusoid_table_2d(context, 3, 2, 8, wrapped.data(), sinusoid);
  ASSERT_EQ(posenc_sinusoid_table_2d(context.get(), 3, 2, 8, 100.0, POSENC_SINCOS_SPLIT, POSENC_F32,
                                     direct.data()),
            POSENC_OK);
  EXPECT_TRUE(same(3 * 2 * 8));
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

// A source reads its RopeCache object at each call: a cache assigned to
// the object since serves (the source kept the replaced one's handle, and
// read it freed), one moved out of it leaves none (a posenc::Error).
TEST(CppApi, ARopeSourceFollowsItsCacheObject) {
  const posenc::Context context;
  posenc_rope_config config = posenc::rope_config(4);
  posenc::RopeCache cache(context, config, 8);
  const posenc::RopeSource source = cache;
  cache = posenc::RopeCache(context, config, 64);
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f}, got(8), want(8);
  const posenc_rope_positions far = posenc::rope_offset(40);  // past the first cache's 8
  posenc::rope(context, source, posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(), got.data(), far);
  posenc::rope(context, config, posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(), want.data(), far);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
  const posenc::RopeCache taken = std::move(cache);
  EXPECT_THROW(posenc::rope(context, source, posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(),
                            got.data(), far),
               posenc::Error);
}

// rope_qk takes nullptr for the q or k it does not rotate (0 heads), as the
// C call does, whatever the other's type.
TEST(CppApi, RopeQkRotatesKOrQAlone) {
  const posenc::Context context;
  const posenc_rope_config config = posenc::rope_config(4);
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f}, alone(8), want(8);
  posenc::rope(context, config, posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(), want.data());
  posenc::rope_qk(context, config, posenc::RopeLayout::bthd, 1, 2, 0, 1, 4, nullptr, nullptr,
                  x.data(), alone.data());
  EXPECT_EQ(alone, want);
  std::fill(alone.begin(), alone.end(), 0.0f);
  posenc::rope_qk(context, config, posenc::RopeLayout::bthd, 1, 2, 1, 0, 4, x.data(), alone.data(),
                  nullptr, nullptr);
  EXPECT_EQ(alone, want);
}

// What would dangle does not compile: a source kept from a temporary cache.
// A source keeps its config by value (and a workspace a context of its own:
// attention_test.cpp).
TEST(CppApi, NothingKeptFromTemporaries) {
  static_assert(!std::is_constructible_v<posenc::RopeSource, posenc::RopeCache&&>);
  static_assert(!std::is_constructible_v<posenc::RopeSource, const posenc::RopeCache&&>);
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
  // A NULL name is the C call's refusal, not std::string's.
  try {
    posenc::isa_from_name(static_cast<const char*>(nullptr));
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(e.what()).find("name"), std::string::npos) << e.what();
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
// The process-wide settings' wrappers reach the C functions and their
// checks, with the static library too, whose runtime once had functions of
// the same names and parameters: the linker took those for the wrappers
// wherever a call was not inlined. Called here through their addresses, so
// that the linker's choice is what runs.
TEST(CppApi, ProcessSettingsGoThroughTheCAbi) {
  void (*volatile set_capacity)(int64_t) = &posenc::set_primitive_cache_capacity;
  int64_t (*volatile capacity_of)() = &posenc::primitive_cache_capacity;
  int64_t (*volatile size_of)() = &posenc::primitive_cache_size;
  int64_t (*volatile evictions_of)() = &posenc::primitive_cache_evictions;
  posenc::Isa (*volatile cap_of)() = &posenc::max_isa;
  const int64_t capacity = capacity_of();
  EXPECT_EQ(capacity, posenc_primitive_cache_capacity());
  for (int64_t bad : {int64_t(0), int64_t(-5)}) {
    try {
      set_capacity(bad);
      FAIL() << "expected posenc::Error for " << bad;
    } catch (const posenc::Error& e) {
      EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(posenc_primitive_cache_capacity(), capacity);
  set_capacity(capacity + 1);
  EXPECT_EQ(posenc_primitive_cache_capacity(), capacity + 1);
  set_capacity(capacity);
  EXPECT_EQ(size_of(), posenc_primitive_cache_size());
  EXPECT_EQ(evictions_of(), posenc_primitive_cache_evictions());
  EXPECT_EQ(cap_of(), posenc::Isa(posenc_max_isa()));
  EXPECT_THROW(posenc::set_max_isa(posenc::Isa(-1)), posenc::Error);
  EXPECT_EQ(cap_of(), posenc::Isa(posenc_max_isa()));
}

// Enum values the C enums do not have are refused, naming the argument:
// negative ones by the C++ API (no C enum can hold them: forming one would
// be undefined, which clang's -fsanitize=enum reports), the others by the C
// ABI, which they reach as they are.
TEST(CppApi, UnknownEnumValuesAreRefused) {
  auto refuses = [](auto call, const char* argument) {
    try {
      call();
      return ::testing::AssertionFailure() << "expected posenc::Error naming " << argument;
    } catch (const posenc::Error& e) {
      if (e.status() == POSENC_ERROR_INVALID_ARGUMENT &&
          std::string(e.what()).find(argument) != std::string::npos) {
        return ::testing::AssertionSuccess();
      }
      return ::testing::AssertionFailure() << e.status() << ": " << e.what();
    }
  };
  const posenc::Context context;
  std::vector<float> x(2 * 4, 1.0f), out(x.size());
  for (int value : {-1, 77, INT32_MIN}) {
    EXPECT_TRUE(refuses([&] { posenc::Context(posenc::Isa(value)); }, "isa"));
    EXPECT_TRUE(refuses([&] { posenc::isa_available(posenc::Isa(value)); }, "isa"));
    EXPECT_TRUE(refuses([&] { posenc::isa_name(posenc::Isa(value)); }, "isa"));  // not NULL
    const posenc::Sinusoid sinusoid{10000.0, posenc::SinCosLayout(value)};
    EXPECT_TRUE(
        refuses([&] { posenc::sinusoid_table(context, 2, 4, out.data(), 0, sinusoid); }, "layout"));
    EXPECT_TRUE(refuses(
        [&] {
          posenc::rope(context, posenc::rope_config(4), posenc::RopeLayout(value), 1, 2, 1, 4,
                       x.data(), out.data());
        },
        "layout"));
    EXPECT_TRUE(refuses(
        [&] {
          posenc::rope(context, posenc::rope_config(4, posenc::RopePairing(value)),
                       posenc::RopeLayout::bthd, 1, 2, 1, 4, x.data(), out.data());
        },
        "pairing"));
  }
}

// Worked from the layouts: BHTD [heads, tokens, head_dim] and BTHD [tokens,
// heads, head_dim] per batch item; a packed qkv's token row holds heads +
// 2 kv_heads heads, k after q's heads, v after k's. Strides int64 cannot
// hold are refused, not wrapped (signed overflow would be undefined).
TEST(CppApi, StrideBuildersRefuseWhatOverflows) {
  const posenc_token_strides bhtd = posenc::dense_strides(POSENC_LAYOUT_BHTD, 3, 5, 7);
  EXPECT_EQ(bhtd.batch, 105);
  EXPECT_EQ(bhtd.head, 35);
  EXPECT_EQ(bhtd.token, 7);
  const posenc_token_strides bthd = posenc::dense_strides(POSENC_LAYOUT_BTHD, 3, 5, 7);
  EXPECT_EQ(bthd.batch, 105);
  EXPECT_EQ(bthd.head, 7);
  EXPECT_EQ(bthd.token, 21);
  const posenc::PackedQkv packed = posenc::packed_qkv(5, 4, 2, 8);
  EXPECT_EQ(packed.strides.batch, 5 * 64);
  EXPECT_EQ(packed.strides.head, 8);
  EXPECT_EQ(packed.strides.token, 64);
  EXPECT_EQ(packed.k_offset, 32);
  EXPECT_EQ(packed.v_offset, 48);

  auto overflows = [](auto call, const char* function) {
    try {
      call();
      return ::testing::AssertionFailure() << "expected posenc::Error from " << function;
    } catch (const posenc::Error& e) {
      if (e.status() == POSENC_ERROR_OVERFLOW && std::string(e.what()).rfind(function, 0) == 0) {
        return ::testing::AssertionSuccess();
      }
      return ::testing::AssertionFailure() << e.status() << ": " << e.what();
    }
  };
  const int64_t big = int64_t(1) << 22;
  for (posenc_attention_layout layout : {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD}) {
    EXPECT_TRUE(
        overflows([&] { posenc::dense_strides(layout, big, big, big); }, "posenc::dense_strides"));
    EXPECT_TRUE(
        overflows([&] { posenc::dense_strides(layout, -big, big, big); }, "posenc::dense_strides"));
  }
  EXPECT_TRUE(
      overflows([&] { posenc::kv_cache_strides(big, big, big); }, "posenc::kv_cache_strides"));
  EXPECT_TRUE(overflows([&] { posenc::packed_qkv(big, big, big, big); }, "posenc::packed_qkv"));
  EXPECT_TRUE(overflows([&] { posenc::packed_qkv(1, INT64_MAX, 1, 1); }, "posenc::packed_qkv"));
  EXPECT_TRUE(
      overflows([&] { posenc::packed_qkv(1, 1, INT64_MAX / 2 + 1, 1); }, "posenc::packed_qkv"));
  EXPECT_TRUE(overflows(
      [&] {
        posenc::packed_qkv_desc(posenc::attention_desc(1, 4, big * big, big * big, big),
                                POSENC_LAYOUT_BHTD);
      },
      "posenc::packed_qkv"));
}

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
