// Bad input to the C ABI: the documented status, a message naming the
// argument, and nothing written.
#include <gtest/gtest.h>

#include <climits>
#include <thread>
#include <string>

#include "c_enum_calls.h"
#include "compare.hpp"
#include "posenc/posenc.h"

namespace posenc::test {
namespace {

constexpr auto kI = POSENC_SINCOS_INTERLEAVED;

TEST(ApiErrors, SinusoidTable) {
  GuardedFloats out(64);
  float* o = out.data();
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, -1, 4, 0, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "length"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, -1, 0, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, -2, 1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "start"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1.0, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "base"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, -5.0, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "base"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e-30, kI, POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "base must be finite, >= 2^-64 and != 1 "
                                                        "(got 1e-30)"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e4,
                                               posenc_sincos_layout(7), POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e4, kI, posenc_dtype(9), o),
                         POSENC_ERROR_INVALID_ARGUMENT, "out_dtype"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e4, kI, POSENC_F32, nullptr),
                         POSENC_ERROR_NULL_POINTER, "out"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, INT64_MAX / 2, 4, 0, 1e4, kI,
                                               POSENC_F32, o),
                         POSENC_ERROR_INVALID_ARGUMENT, "length"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, int64_t(1) << 40, int64_t(1) << 40, 0,
                                               1e4, kI, POSENC_F32, o),
                         POSENC_ERROR_OVERFLOW, "out"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(ApiErrors, SinusoidTable2dNeedsEvenDim) {
  GuardedFloats out(64);
  EXPECT_TRUE(fails_with(posenc_sinusoid_table_2d(nullptr, 2, 2, 5, 1e4, kI, POSENC_F32,
                                                  out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(
      fails_with(posenc_sinusoid_table_2d(nullptr, 2, -3, 4, 1e4, kI, POSENC_F32, out.data()),
                 POSENC_ERROR_INVALID_ARGUMENT, "width"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(ApiErrors, AddSinusoidAliasing) {
  GuardedFloats buffer(64);
  float* x = buffer.data();
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 1, 4, 8, 0, 1e4, kI, x, x + 1),
                         POSENC_ERROR_ALIASING, "out"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 1, 4, 8, 0, 1e4, kI, nullptr, x),
                         POSENC_ERROR_NULL_POINTER, "x"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, -1, 4, 8, 0, 1e4, kI, x, x),
                         POSENC_ERROR_INVALID_ARGUMENT, "batch"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 1, 4, 8, -1, 1e4, kI, x, x),
                         POSENC_ERROR_INVALID_ARGUMENT, "offset"));
  EXPECT_TRUE(buffer.payload_untouched());
}

TEST(ApiErrors, AddLearned) {
  GuardedFloats out(64);
  const std::vector<float> table(32, 1.0f), x(32, 1.0f);
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 1, 4, 8, 0, nullptr, 4, x.data(),
                                            out.data()),
                         POSENC_ERROR_NULL_POINTER, "table"));
  EXPECT_TRUE(
      fails_with(posenc_add_learned(nullptr, 1, 4, 8, 0, table.data(), -1, x.data(), out.data()),
                 POSENC_ERROR_INVALID_ARGUMENT, "table_rows"));
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 1, 4, 8, 1, table.data(), 4, x.data(),
                                            out.data()),
                         POSENC_ERROR_SHAPE_MISMATCH, "table_rows"));
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 1, 4, 8, 0, out.data(), 4, x.data(),
                                            out.data()),
                         POSENC_ERROR_ALIASING, "table"));
  EXPECT_TRUE(out.payload_untouched());
}

TEST(ApiErrors, ConcatSinusoid) {
  GuardedFloats buffer(64);
  float* b = buffer.data();
  EXPECT_TRUE(fails_with(posenc_concat_sinusoid(nullptr, 1, 2, 4, 4, 0, 1e4, kI, b, b),
                         POSENC_ERROR_ALIASING, "out"));
  EXPECT_TRUE(fails_with(posenc_concat_sinusoid(nullptr, 1, 2, 4, 0, 0, 1e4, kI, b, b + 32),
                         POSENC_ERROR_INVALID_ARGUMENT, "pos_dim"));
  EXPECT_TRUE(fails_with(posenc_concat_sinusoid(nullptr, 1, 2, INT64_MAX, 4, 0, 1e4, kI, b,
                                                b + 32),
                         POSENC_ERROR_OVERFLOW, "x_dim"));
  EXPECT_TRUE(buffer.payload_untouched());
}

TEST(ApiErrors, Contexts) {
  posenc_context* context = nullptr;
  EXPECT_TRUE(fails_with(posenc_context_create(POSENC_ISA_AUTO, 0, nullptr),
                         POSENC_ERROR_NULL_POINTER, "context"));
  EXPECT_TRUE(fails_with(posenc_context_create(POSENC_ISA_AUTO, -1, &context),
                         POSENC_ERROR_INVALID_ARGUMENT, "num_threads"));
  EXPECT_TRUE(fails_with(posenc_context_create(posenc_isa(42), 0, &context),
                         POSENC_ERROR_INVALID_ARGUMENT, "isa"));
  EXPECT_EQ(context, nullptr);
  EXPECT_TRUE(fails_with(posenc_set_max_isa(posenc_isa(1000)), POSENC_ERROR_INVALID_ARGUMENT,
                         "isa"));
  posenc_isa isa;
  EXPECT_TRUE(fails_with(posenc_isa_from_name("sse9", &isa), POSENC_ERROR_INVALID_ARGUMENT,
                         "name"));
}

// Enum arguments are ints in C: negative ones are refused (checked as
// integers before use, which UBSan verifies).
TEST(ApiErrors, NegativeEnums) {
  EXPECT_STREQ(c_status_string(-1), "unknown status");
  EXPECT_EQ(c_isa_name(-1), nullptr);
  int available = 7;
  EXPECT_TRUE(fails_with(c_isa_available(-1, &available), POSENC_ERROR_INVALID_ARGUMENT, "isa"));
  EXPECT_EQ(available, 7);
  // AUTO is a known value that names no path.
  EXPECT_TRUE(fails_with(posenc_isa_available(POSENC_ISA_AUTO, &available),
                         POSENC_ERROR_INVALID_ARGUMENT, "isa: AUTO is not a path"));
  EXPECT_EQ(available, 7);
  const posenc_isa cap = posenc_max_isa();
  EXPECT_TRUE(fails_with(c_set_max_isa(-1), POSENC_ERROR_INVALID_ARGUMENT, "isa"));
  EXPECT_EQ(posenc_max_isa(), cap);
  posenc_context* context = nullptr;
  EXPECT_TRUE(fails_with(c_context_create(-1, &context), POSENC_ERROR_INVALID_ARGUMENT, "isa"));
  EXPECT_EQ(context, nullptr);

  GuardedFloats out(16);
  const std::vector<float> x(16, 1.0f);
  EXPECT_TRUE(fails_with(c_sinusoid_table(-1, POSENC_F32, out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(fails_with(c_sinusoid_table(kI, -1, out.data()), POSENC_ERROR_INVALID_ARGUMENT,
                         "out_dtype"));
  EXPECT_TRUE(fails_with(c_sinusoid_table_2d(-1, POSENC_F32, out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(fails_with(c_sinusoid_table_2d(kI, -1, out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "out_dtype"));
  EXPECT_TRUE(fails_with(c_add_sinusoid(-1, x.data(), out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(fails_with(c_concat_sinusoid(-1, x.data(), out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "layout"));
  EXPECT_TRUE(out.payload_untouched());
}

// Tensors must be aligned to their elements (core.h): an odd pointer is
// refused by name and nothing is written.
TEST(ApiErrors, MisalignedTensors) {
  GuardedFloats out(40);
  std::vector<float> x(40, 1.0f), table(40, 2.0f);
  float* odd_out = offset_bytes(out.data(), 1);
  const float* odd_x = offset_bytes(x.data(), 2);
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e4, kI, POSENC_F32, odd_out),
                         POSENC_ERROR_INVALID_ARGUMENT, "out"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e4, kI, POSENC_BF16, odd_out),
                         POSENC_ERROR_INVALID_ARGUMENT, "out"));
  EXPECT_TRUE(fails_with(posenc_sinusoid_table_2d(nullptr, 2, 2, 4, 1e4, kI, POSENC_F32,
                                                  odd_out),
                         POSENC_ERROR_INVALID_ARGUMENT, "out"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 1, 4, 4, 0, 1e4, kI, odd_x, out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "x"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 1, 4, 4, 0, 1e4, kI, x.data(), odd_out),
                         POSENC_ERROR_INVALID_ARGUMENT, "out"));
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 1, 4, 4, 0, offset_bytes(table.data(), 3),
                                            4, x.data(), out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "table"));
  EXPECT_TRUE(fails_with(posenc_concat_sinusoid(nullptr, 1, 4, 2, 2, 0, 1e4, kI, odd_x,
                                                out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "x"));
  EXPECT_TRUE(out.payload_untouched());
  // bf16 needs 2 bytes: an even address that is not a float's is fine.
  EXPECT_EQ(posenc_sinusoid_table(nullptr, 4, 4, 0, 1e4, kI, POSENC_BF16,
                                  offset_bytes(out.data(), 2)),
            POSENC_OK)
      << posenc_last_error();
}

// A size too large for the positions is named, not the offset next to it.
TEST(ApiErrors, HugeSizesAreNamed) {
  GuardedFloats out(64);
  std::vector<float> x(64, 1.0f), table(64, 2.0f);
  EXPECT_TRUE(fails_with(posenc_sinusoid_table(nullptr, INT64_MAX, 1, 0, 1e4, kI, POSENC_F32,
                                               out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "length"));
  EXPECT_TRUE(fails_with(posenc_add_sinusoid(nullptr, 1, INT64_MAX, 1, 0, 1e4, kI, x.data(),
                                             out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "tokens"));
  EXPECT_TRUE(fails_with(posenc_concat_sinusoid(nullptr, 1, INT64_MAX, 1, 1, 0, 1e4, kI,
                                                x.data(), out.data()),
                         POSENC_ERROR_INVALID_ARGUMENT, "tokens"));
  EXPECT_TRUE(fails_with(posenc_add_learned(nullptr, 1, INT64_MAX, 1, 0, table.data(), 64,
                                            x.data(), out.data()),
                         POSENC_ERROR_SHAPE_MISMATCH, "tokens"));
  EXPECT_TRUE(out.payload_untouched());
}

// The functions that cannot fail still answer every input.
TEST(ApiErrors, TotalFunctions) {
  EXPECT_STREQ(posenc_status_string(POSENC_ERROR_ALIASING), "aliasing not allowed");
  EXPECT_STREQ(posenc_status_string(posenc_status(4242)), "unknown status");
  EXPECT_NE(std::string(posenc_version()), "");
  EXPECT_NE(posenc_isa_name(posenc_max_isa()), nullptr);
}

TEST(ApiErrors, LastErrorIsPerThread) {
  EXPECT_NE(posenc_sinusoid_table(nullptr, -1, 1, 0, 1e4, kI, POSENC_F32, nullptr), POSENC_OK);
  std::string other;
  std::thread([&] { other = posenc_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(posenc_last_error()), "");
}

}  // namespace
}  // namespace posenc::test
