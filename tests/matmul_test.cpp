// The oneDNN GEMM wrapper against a naive double loop, and from many threads.
#include "runtime/matmul.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compare.hpp"
#include "posenc/core.h"
#include "runtime/error.hpp"
#include "runtime/matmul_primitive.hpp"
#include "runtime/parallel.hpp"
#include "runtime/parallel_matmul.hpp"

namespace posenc::test {
namespace {

std::vector<double> naive_matmul(const MatmulShape& s, const float* a, const float* b,
                                 const float* c_in) {
  std::vector<double> c(size_t(s.batch * s.m * s.ldc), 0.0);
  for (int64_t bi = 0; bi < s.batch; ++bi) {
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < s.k; ++p) {
          const double av = a[bi * s.batch_stride_a + i * s.lda + p];
          const double bv = s.transpose_b ? b[bi * s.batch_stride_b + j * s.ldb + p]
                                          : b[bi * s.batch_stride_b + p * s.ldb + j];
          sum += av * bv;
        }
        const size_t at = size_t(bi * s.batch_stride_c + i * s.ldc + j);
        c[at] = s.alpha * sum + (s.accumulate ? double(c_in[at]) : 0.0);
      }
    }
  }
  return c;
}

// The bf16 GEMM of `s` on random operands (of seed) against the naive loop
// on their bf16 values, C's padding (ldc past n) untouched, or nullopt
// where this CPU has no bf16 GEMM.
std::optional<::testing::AssertionResult> bf16_matmul_matches(const MatmulShape& s,
                                                              uint32_t seed) {
  const int64_t b_rows = s.transpose_b ? s.n : s.k;
  const std::vector<uint16_t> a16 = to_bf16(
      random_floats(size_t((s.batch - 1) * s.batch_stride_a + s.m * s.lda), seed));
  const std::vector<uint16_t> b16 = to_bf16(
      random_floats(size_t((s.batch - 1) * s.batch_stride_b + b_rows * s.ldb), seed + 1));
  const std::vector<float> a = from_bf16(a16), b = from_bf16(b16);
  const std::vector<float> before =
      random_floats(size_t((s.batch - 1) * s.batch_stride_c + s.m * s.ldc), seed + 2);
  std::vector<float> out = before;
  std::vector<double> want = naive_matmul(s, a.data(), b.data(), before.data());
  try {
    matmul(s, a16.data(), b16.data(), out.data());
  } catch (const Error& e) {
    if (e.status() != POSENC_ERROR_UNSUPPORTED) throw;
    return std::nullopt;
  }
  for (size_t at = 0; at < out.size(); ++at) {
    const int64_t in_item = s.batch_stride_c > 0 ? int64_t(at) % s.batch_stride_c : int64_t(at);
    const int64_t column = in_item % s.ldc;
    if (column >= s.n) want[at] = before[at];
  }
  return all_close(out.data(), want, 1e-4, 1e-4);
}

struct Case {
  int64_t batch, m, n, k;
  bool transpose_b, broadcast_b, accumulate;
  float alpha;
  bool broadcast_a = false;
};

MatmulShape shape_of(const Case& c) {
  MatmulShape s;
  s.batch = c.batch;
  s.m = c.m;
  s.n = c.n;
  s.k = c.k;
  s.lda = c.k + 3;  // padded rows: strides are honoured
  s.ldb = c.transpose_b ? c.k + 1 : c.n + 2;
  s.ldc = c.n + 5;
  s.transpose_b = c.transpose_b;
  s.batch_stride_a = c.broadcast_a ? 0 : s.m * s.lda;
  s.batch_stride_b = c.broadcast_b ? 0 : (c.transpose_b ? c.n : c.k) * s.ldb;
  s.batch_stride_c = s.m * s.ldc;
  s.alpha = c.alpha;
  s.accumulate = c.accumulate;
  return s;
}

TEST(Matmul, MatchesNaiveLoop) {
  const Case cases[] = {
      {1, 1, 1, 1, false, false, false, 1.0f},   {1, 7, 5, 3, true, false, false, 1.0f},
      {3, 17, 65, 64, true, true, false, 0.125f}, {2, 64, 129, 80, false, false, true, 1.0f},
      {4, 33, 31, 128, true, false, true, 0.5f},  {1, 257, 513, 64, true, true, false, 1.0f},
  };
  for (const Case& c : cases) {
    const MatmulShape s = shape_of(c);
    SCOPED_TRACE(testing::Message() << c.batch << "x" << c.m << "x" << c.n << "x" << c.k);
    const auto a = random_floats(size_t(s.batch * s.batch_stride_a), 1);
    const auto b = random_floats(size_t(std::max<int64_t>(s.batch_stride_b * s.batch,
                                                          (c.transpose_b ? c.n : c.k) * s.ldb)),
                                 2);
    std::vector<float> out = random_floats(size_t(s.batch * s.batch_stride_c), 3);
    const auto want = naive_matmul(s, a.data(), b.data(), out.data());
    matmul(s, a.data(), b.data(), out.data());
    for (int64_t bi = 0; bi < s.batch; ++bi) {
      for (int64_t i = 0; i < s.m; ++i) {
        const size_t row = size_t(bi * s.batch_stride_c + i * s.ldc);
        std::vector<double> want_row(want.begin() + row, want.begin() + row + s.n);
        ASSERT_TRUE(all_close(out.data() + row, want_row, 1e-5, 1e-5));
      }
    }
  }
}

// parallel_matmul's tiles (128 x 256 of C, tails in both dims, a last row
// tile of 1 row) against the naive loop, C's padding untouched, and the
// same bits at 1, 2 and 3 threads; with B as stored and, where oneDNN packs
// it, packed once per column tile (written within its bytes). Batches: of
// B's column panels over one A (the BoTNet block's projection), of A's
// over one B (packed once for all), and of both, one with two column tiles
// (the last narrower) per item.
TEST(Matmul, ParallelMatmulHasTheSameBitsAtEveryThreadCount) {
  const Case cases[] = {
      {1, 1, 1, 1, true, false, false, 1.0f},
      {1, 300, 600, 64, true, false, false, 1.0f},
      {1, 129, 257, 5, false, false, true, 0.5f},
      {1, 128, 256, 130, true, false, true, 1.0f},
      {1, 56, 3, 4, true, false, false, 1.0f},
      {1, 257, 520, 33, true, false, false, 1.0f},
      {3, 257, 128, 40, true, false, false, 1.0f, true},
      {2, 130, 300, 9, true, true, true, 0.5f},
      {4, 129, 64, 17, false, false, false, 1.0f, true},
      {2, 130, 300, 9, true, false, false, 1.0f},
  };
  int packed_cases = 0, packed_batches = 0;
  for (const Case& c : cases) {
    const MatmulShape s = shape_of(c);
    const size_t packed_bytes = parallel_matmul_packed_b_bytes(s);
    packed_cases += packed_bytes > 0;
    packed_batches += packed_bytes > 0 && c.batch > 1;
    const int64_t a_items = c.broadcast_a ? 1 : c.batch, b_items = c.broadcast_b ? 1 : c.batch;
    const auto a = random_floats(size_t(a_items * s.m * s.lda), 1);
    const auto b = random_floats(size_t(b_items * (c.transpose_b ? c.n : c.k) * s.ldb), 2);
    const auto c_in = random_floats(size_t(c.batch * s.batch_stride_c), 3);
    const auto want = naive_matmul(s, a.data(), b.data(), c_in.data());
    for (const bool packed : {false, true}) {
      if (packed && packed_bytes == 0) continue;
      SCOPED_TRACE(testing::Message() << c.batch << "x" << c.m << "x" << c.n << "x" << c.k
                                      << (packed ? ", B packed" : ""));
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        std::vector<float> out = c_in;
        constexpr size_t kGuard = 64;
        std::vector<uint8_t> packed_b(packed ? packed_bytes + kGuard : 0, 0xA5);
        parallel_matmul(threads, s, a.data(), b.data(), out.data(),
                        packed ? packed_b.data() : nullptr);
        for (size_t i = packed_bytes; i < packed_b.size(); ++i) {
          ASSERT_EQ(packed_b[i], 0xA5) << "wrote past the packed B's " << packed_bytes << " bytes";
        }
        if (threads > 1) {
          EXPECT_TRUE(out == first) << threads << " threads";
          continue;
        }
        first = out;
        for (int64_t item = 0; item < c.batch; ++item) {
          for (int64_t i = 0; i < s.m; ++i) {
            const size_t row = size_t(item * s.batch_stride_c + i * s.ldc);
            const std::vector<double> want_row(want.begin() + row, want.begin() + row + s.n);
            ASSERT_TRUE(all_close(out.data() + row, want_row, 1e-5, 1e-5))
                << "item " << item << " row " << i;
            ASSERT_TRUE(std::equal(out.begin() + row + s.n, out.begin() + row + s.ldc,
                                   c_in.begin() + row + s.n))
                << "padding of item " << item << " row " << i;
          }
        }
      }
    }
  }
#if defined(__x86_64__)
  EXPECT_GT(packed_cases, 0) << "oneDNN packs B of no case: the packed path went untested";
  EXPECT_GT(packed_batches, 0) << "oneDNN packs B of no batch: their packing went untested";
#endif
}

// parallel_matmul with alpha 0 (zeros written), with no rows or columns (C
// untouched), and in bf16 (C in fp32 and in bf16: A, B and C offsets of
// their own sizes; B as stored and packed).
TEST(Matmul, ParallelMatmulEdgesAndBf16) {
  MatmulShape zero = shape_of({1, 129, 300, 8, true, false, false, 0.0f});
  const auto za = random_floats(size_t(zero.batch_stride_a), 9);
  const auto zb = random_floats(size_t(zero.n * zero.ldb), 10);
  std::vector<float> zeroed(size_t(zero.batch_stride_c), 5.0f);
  parallel_matmul(2, zero, za.data(), zb.data(), zeroed.data());
  for (int64_t i = 0; i < zero.m; ++i) {
    for (int64_t j = 0; j < zero.ldc; ++j) {
      ASSERT_EQ(zeroed[size_t(i * zero.ldc + j)], j < zero.n ? 0.0f : 5.0f) << i << "," << j;
    }
  }
  for (int64_t empty : {0, 1}) {
    MatmulShape none = zero;
    none.alpha = 1.0f;
    (empty == 0 ? none.m : none.n) = 0;
    std::vector<float> untouched(size_t(zero.batch_stride_c), 5.0f);
    parallel_matmul(2, none, za.data(), zb.data(), untouched.data());
    EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](float x) { return x == 5.0f; }));
  }
  // (Last: it skips where oneDNN has no bf16 GEMM.)
  MatmulShape s = shape_of({1, 129, 257, 40, true, false, false, 1.0f});
  s.ab_type = POSENC_BF16;
  const std::vector<uint16_t> a16 = to_bf16(random_floats(size_t(s.batch_stride_a), 7));
  const std::vector<uint16_t> b16 = to_bf16(random_floats(size_t(s.n * s.ldb), 8));
  const std::vector<float> a = from_bf16(a16), b = from_bf16(b16);
  const auto want = naive_matmul(s, a.data(), b.data(), nullptr);
  for (posenc_dtype c_type : {POSENC_F32, POSENC_BF16}) {
    s.c_type = c_type;
    size_t packed_bytes = 0;
    try {
      packed_bytes = parallel_matmul_packed_b_bytes(s);
    } catch (const Error& e) {
      if (e.status() != POSENC_ERROR_UNSUPPORTED) throw;
      GTEST_SKIP() << "no bf16 GEMM on this CPU: " << e.what();
    }
    for (const bool packed : {false, true}) {
      if (packed && packed_bytes == 0) continue;
      SCOPED_TRACE(testing::Message() << "C of dtype " << c_type << (packed ? ", B packed" : ""));
      std::vector<uint8_t> packed_b(packed ? packed_bytes : 0);
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        std::vector<float> out(size_t(s.batch_stride_c), 0.0f);  // (bf16 C: its first half)
        try {
          parallel_matmul(threads, s, a16.data(), b16.data(), out.data(),
                          packed ? packed_b.data() : nullptr);
        } catch (const Error& e) {
          if (e.status() != POSENC_ERROR_UNSUPPORTED) throw;
          GTEST_SKIP() << "no bf16 GEMM on this CPU: " << e.what();
        }
        if (threads > 1) {
          EXPECT_TRUE(out == first) << threads << " threads";
          continue;
        }
        first = out;
        std::vector<float> got(out.begin(), out.end());
        if (c_type == POSENC_BF16) {
          const auto* bits = reinterpret_cast<const uint16_t*>(out.data());
          got = from_bf16(std::vector<uint16_t>(bits, bits + out.size()));
        }
        for (int64_t i = 0; i < s.m; ++i) {
          const size_t row = size_t(i * s.ldc);
          const std::vector<double> want_row(want.begin() + row, want.begin() + row + s.n);
          const double rtol = c_type == POSENC_BF16 ? 1e-2 : 1e-4;
          ASSERT_TRUE(all_close(got.data() + row, want_row, 1e-4, rtol)) << "row " << i;
        }
      }
    }
  }
}

// Dense bf16 GEMMs of these widths, including 49..63 columns, which oneDNN
// 2.6.3's AMX path computes wrong unless posenc routes them around it.
TEST(Matmul, Bf16InputsAccumulateInF32) {
  for (int64_t n : {11, 48, 49, 55, 63, 64, 100}) {
    for (int64_t m : {9, 32}) {
      for (bool transpose : {true, false}) {
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " transpose "
                                          << transpose << " accumulate " << accumulate);
          MatmulShape s;
          s.m = m;
          s.n = n;
          s.k = 64;
          s.lda = s.k;
          s.ldb = transpose ? s.k : s.n;
          s.ldc = s.n;
          s.transpose_b = transpose;
          s.accumulate = accumulate;
          s.ab_type = POSENC_BF16;
          const auto matches = bf16_matmul_matches(s, 4);
          if (!matches) GTEST_SKIP() << "no bf16 GEMM on this CPU";
          ASSERT_TRUE(*matches);
        }
      }
    }
  }
}

// bf16 GEMMs of depth 63, which oneDNN 2.6.3's AMX kernels run into an
// illegal instruction (at 65 rows of 7 columns among many): on AMX run at
// depth 64 on padded copies, never made at 63. Beside them the depths around 63,
// batches (B broadcast too), strided and dense operands, outputs of 55
// columns (a padded output copy too), alpha 0, and a B passed as packed,
// which for them is B as stored.
TEST(Matmul, Bf16DepthOfSixtyThreeRunsPadded) {
  for (int64_t k : {31, 62, 63, 64}) {
    for (int64_t m : {1, 65, 130}) {
      for (int64_t n : {7, 55}) {
        for (bool transpose : {true, false}) {
          for (bool accumulate : {false, true}) {
            for (float alpha : {1.0f, 0.0f}) {
              SCOPED_TRACE(testing::Message() << "k " << k << " m " << m << " n " << n
                                              << " transpose " << transpose << " accumulate "
                                              << accumulate << " alpha " << alpha);
              MatmulShape s;
              s.batch = 2;
              s.m = m;
              s.n = n;
              s.k = k;
              s.lda = m == 65 ? k + 2 : k;
              s.ldb = transpose ? s.k : s.n + int64_t(accumulate);
              s.ldc = s.n + int64_t(alpha == 0.0f);
              s.batch_stride_a = s.m * s.lda;
              s.batch_stride_b = m == 130 ? 0 : (transpose ? s.n : s.k) * s.ldb;
              s.batch_stride_c = s.m * s.ldc;
              s.transpose_b = transpose;
              s.accumulate = accumulate;
              s.alpha = alpha;
              s.ab_type = POSENC_BF16;
              const auto matches = bf16_matmul_matches(s, 11);
              if (!matches) GTEST_SKIP() << "no bf16 GEMM on this CPU";
              ASSERT_TRUE(*matches);
              if (k == 63 && onednn_bf16_gemm_is_amx()) {
                EXPECT_EQ(cached_matmul_if_made(s), nullptr);
              }
            }
          }
        }
      }
    }
  }
  if (!onednn_bf16_gemm_is_amx()) return;  // (where oneDNN runs depth 63 itself)
  MatmulShape packed = dense_a_bt(65, 7, 63);
  packed.ab_type = POSENC_BF16;
  packed.b_packed = true;
  EXPECT_EQ(packed_b_bytes(packed), 0u);
  EXPECT_TRUE(*bf16_matmul_matches(packed, 17));
  EXPECT_EQ(cached_matmul_if_made(packed), nullptr);
}

// bf16 outputs of a padded depth are rounded once, from fp32 sums: row i
// of A holds 1 at column i and 2^-9 at columns 31, 40 and 62, B ones, so
// each sum is 1 + 3 2^-9, which rounds up to 1 + 2^-7. Rounded after column
// 31 and again at the end (a split of the depth), 1 + 2^-9 would round to 1
// and 1 + 2^-8 tie to 1.
TEST(Matmul, Bf16DepthOfSixtyThreeRoundsOnce) {
  MatmulShape s = dense_a_bt(4, 3, 63);
  s.ab_type = s.c_type = POSENC_BF16;
  std::vector<uint16_t> a(size_t(s.m * s.k), posenc_f32_to_bf16(0.0f));
  for (int64_t i = 0; i < s.m; ++i) {
    a[size_t(i * s.k + i)] = posenc_f32_to_bf16(1.0f);
    for (int64_t column : {31, 40, 62}) a[size_t(i * s.k + column)] = posenc_f32_to_bf16(0x1p-9f);
  }
  const std::vector<uint16_t> b(size_t(s.n * s.k), posenc_f32_to_bf16(1.0f));
  std::vector<uint16_t> c(size_t(s.m * s.n));
  try {
    matmul(s, a.data(), b.data(), c.data());
  } catch (const Error& e) {
    if (e.status() != POSENC_ERROR_UNSUPPORTED) throw;
    GTEST_SKIP() << "no bf16 GEMM on this CPU";
  }
  for (uint16_t x : c) EXPECT_EQ(posenc_bf16_to_f32(x), 1.0f + 0x1p-7f);
}

// Alpha 0 (attention with scale 0): C = 0 * A B, written whatever C held
// (oneDNN 2.6's gemm:jit, which runs bf16 outputs of 63 columns 64 apart,
// left C as it was with an output scale of 0), NaN where A B is not
// finite; accumulating, C as it was.
TEST(Matmul, AlphaZeroWritesZeros) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  for (posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (int64_t n : {17, 63, 64}) {
      for (bool accumulate : {false, true}) {
        // Dense rows too: bf16 ones of 49 to 63 columns go through a padded copy.
        for (int64_t ldc : {int64_t(64), n}) {
          SCOPED_TRACE(testing::Message() << "type " << type << " n " << n << " accumulate "
                                          << accumulate << " ldc " << ldc);
          MatmulShape s;
          s.m = 5;
          s.n = n;
          s.k = 16;
          s.lda = s.ldb = s.k;
          s.ldc = ldc;
          s.transpose_b = true;
          s.ab_type = type;
          s.alpha = 0.0f;
          s.accumulate = accumulate;
          std::vector<float> a = random_floats(size_t(s.m * s.k), 7);
          a[size_t(2 * s.k + 3)] = std::numeric_limits<float>::infinity();  // row 2: Inf . b
          const std::vector<float> b = random_floats(size_t(s.n * s.k), 8);
          const std::vector<uint16_t> a16 = to_bf16(a), b16 = to_bf16(b);
          std::vector<float> c(size_t(s.m * s.ldc), accumulate ? 0.5f : kNan);
          try {
            matmul(s, type == POSENC_BF16 ? static_cast<const void*>(a16.data()) : a.data(),
                   type == POSENC_BF16 ? static_cast<const void*>(b16.data()) : b.data(), c.data());
          } catch (const std::exception& e) {
            GTEST_SKIP() << "no bf16 GEMM on this CPU: " << e.what();
          }
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.ldc; ++j) {
              const float got = c[size_t(i * s.ldc + j)];
              if (accumulate) {
                ASSERT_EQ(got, 0.5f) << i << ", " << j;
              } else if (j >= n) {
                ASSERT_TRUE(std::isnan(got)) << "past n: " << i << ", " << j;
              } else if (i == 2) {
                ASSERT_TRUE(std::isnan(got)) << j;
              } else {
                ASSERT_EQ(got, 0.0f) << i << ", " << j;
              }
            }
          }
        }
      }
    }
  }
}

// B packed once into oneDNN's layout, then used by GEMMs of the same layout
// (a full block's and, where it serves, a shorter tail's), fp32 and bf16.
TEST(Matmul, PackedBMatchesNaiveLoop) {
  struct PackCase {
    int64_t m, n, k;
    bool transpose_b;
  };
  const PackCase cases[] = {{64, 1024, 64, true}, {64, 64, 1024, false}, {17, 100, 8, true},
                            {5, 128, 196, false}, {64, 128, 197, false}, {1, 1, 1, true}};
  for (posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (const PackCase& c : cases) {
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(testing::Message() << (type == POSENC_BF16 ? "bf16 " : "f32 ") << c.m << "x"
                                        << c.n << "x" << c.k << " transpose " << c.transpose_b
                                        << " accumulate " << accumulate);
        MatmulShape s;
        s.m = c.m;
        s.n = c.n;
        s.k = c.k;
        s.lda = c.k + 1;
        s.ldb = c.transpose_b ? c.k + 2 : c.n + 3;
        s.ldc = c.n;
        s.transpose_b = c.transpose_b;
        s.ab_type = type;
        s.alpha = 0.5f;
        s.accumulate = accumulate;
        s.b_packed = true;
        std::vector<float> a = random_floats(size_t(s.m * s.lda), 7);
        std::vector<float> b = random_floats(size_t((c.transpose_b ? s.n : s.k) * s.ldb), 8);
        const std::vector<uint16_t> a16 = to_bf16(a), b16 = to_bf16(b);
        if (type == POSENC_BF16) {  // the naive loop sees the GEMM's inputs
          a = from_bf16(a16);
          b = from_bf16(b16);
        }
        const void* a_data = type == POSENC_BF16 ? static_cast<const void*>(a16.data()) : a.data();
        const void* b_data = type == POSENC_BF16 ? static_cast<const void*>(b16.data()) : b.data();
        size_t bytes = 0;
        try {
          bytes = packed_b_bytes(s);
        } catch (const std::exception& e) {
          GTEST_SKIP() << "no bf16 GEMM on this CPU: " << e.what();
        }
        std::vector<uint8_t> packed(bytes);
        if (bytes > 0) pack_b(s, b_data, packed.data());
        const void* b_operand = bytes > 0 ? static_cast<const void*>(packed.data()) : b_data;
        EXPECT_TRUE(packed_b_serves(s, s));
        for (int64_t rows : {c.m, (c.m + 1) / 2}) {
          MatmulShape run = s;
          run.m = rows;
          if (!packed_b_serves(run, s)) continue;  // oneDNN picked another layout
          std::vector<float> out = random_floats(size_t(rows * s.ldc), 9);
          const auto want = naive_matmul(run, a.data(), b.data(), out.data());
          matmul(run, a_data, b_operand, out.data());
          ASSERT_TRUE(all_close(out.data(), want, 1e-4, 1e-4)) << "rows " << rows;
        }
        if (bytes > 0) {
          MatmulShape other = s;
          other.n = other.ldc = s.n + 64;
          if (!c.transpose_b) other.ldb = other.n;
          EXPECT_FALSE(packed_b_serves(other, s)) << "a wider B has another packed layout";
        }
      }
    }
  }
}

// Whether oneDNN runs `type`'s GEMMs on its gemm (no brgemm: the AVX2
// path), which lays a packed B out plain.
bool packs_b_plain(posenc_dtype type) {
  return std::string(onednn_matmul_impl(type)).rfind("gemm:", 0) == 0;
}

// Whether oneDNN runs `type`'s GEMMs on its brgemm kernels, which pack B in
// blocks of 64 columns.
bool runs_brgemm(posenc_dtype type) {
  return std::string(onednn_matmul_impl(type)).rfind("brg:", 0) == 0;
}

// The values' GEMM of a block of k keys: probabilities [m, k] times values
// [k, n] (a view: rows n + 3 apart) into a dense accumulator, B packed. (A
// strided A or C would take oneDNN off brgemm.)
MatmulShape values_gemm(int64_t m, int64_t k, int64_t n, posenc_dtype type) {
  MatmulShape s;
  s.m = m;
  s.k = s.lda = k;
  s.n = s.ldc = n;
  s.ldb = n + 3;
  s.ab_type = type;
  s.b_packed = true;
  return s;
}

// B of `whole` (b [k, n] rows ldb apart; transposed, [n, k]: the keys)
// packed for it, b rounded to bf16 for bf16 GEMMs. The values' rows from
// `length` on are NaN (a cache's unwritten rows), then rows [length,
// zeroed) zero in the packed copy and in b: a GEMM over keys rounded up
// past the length multiplies them by 0 only. Empty where oneDNN reads B as
// stored; throws where it has no GEMM of the type here.
std::vector<uint8_t> packed_b_past_length(const MatmulShape& whole, int64_t length,
                                          int64_t zeroed, std::vector<float>& b) {
  const bool values = !whole.transpose_b;
  b = random_floats(size_t((values ? whole.k : whole.n) * whole.ldb), 3);
  for (int64_t r = length; r < whole.k && values; ++r) {
    std::fill_n(b.begin() + r * whole.ldb, whole.n, std::numeric_limits<float>::quiet_NaN());
  }
  const std::vector<uint16_t> b16 = to_bf16(b);
  if (whole.ab_type == POSENC_BF16) b = from_bf16(b16);
  std::vector<uint8_t> packed(packed_b_bytes(whole));
  if (packed.empty()) return packed;
  pack_b(whole, whole.ab_type == POSENC_BF16 ? static_cast<const void*>(b16.data()) : b.data(),
         packed.data());
  if (values) {
    zero_packed_b_rows(whole, packed.data(), length, zeroed);
    for (int64_t r = length; r < zeroed; ++r) std::fill_n(b.begin() + r * whole.ldb, whole.n, 0.0f);
  }
  return packed;
}

// B packed for a block of keys serves GEMMs of fewer of them where the
// layout allows (a causal block, a sequence's length): the scores' B^T
// (fewer columns) and the values' B (fewer rows, those past the length set
// to zero after packing, NaN before), fp32 and bf16; values of 64 and 256
// columns (fp32 rows of 256 packed plain are spread: rows_spread).
TEST(Matmul, PackedBServesLeadingKeysWithZeroedRows) {
  struct Operand {
    bool transpose_b;  // the scores' B^T (keys x head_dim), else the values' B
    int64_t columns;
  };
  for (posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (const Operand operand : {Operand{true, 512}, Operand{false, 64}, Operand{false, 256}}) {
      const bool transpose_b = operand.transpose_b;
      MatmulShape whole;
      whole.m = 64;
      whole.k = transpose_b ? 64 : 512;
      whole.n = operand.columns;
      whole.lda = whole.k;
      whole.ldb = transpose_b ? whole.k + 3 : whole.n + 3;
      whole.ldc = whole.n;
      whole.transpose_b = transpose_b;
      whole.ab_type = type;
      whole.b_packed = true;
      const int64_t length = 100, keys = 128;  // keys rounded up past the length
      std::vector<float> b;
      std::vector<uint8_t> packed;
      try {
        packed = packed_b_past_length(whole, length, keys, b);
      } catch (const std::exception& e) {
        GTEST_SKIP() << "no bf16 GEMM on this CPU: " << e.what();
      }
      if (packed.empty()) continue;  // oneDNN reads B as stored here
      int served = 0;
      for (int64_t part_keys : {keys, int64_t(448), int64_t(480), int64_t(32)}) {
        MatmulShape part = whole;
        (transpose_b ? part.n : part.k) = part_keys;
        if (!transpose_b && part_keys > keys) continue;  // rows past them hold NaN
        part.lda = part.k;
        part.ldc = part.n;
        SCOPED_TRACE(testing::Message() << (type == POSENC_BF16 ? "bf16" : "f32") << " transpose "
                                        << transpose_b << " keys " << part_keys);
        if (!packed_b_serves(part, whole)) continue;  // oneDNN picked another layout
        ++served;
        std::vector<float> a = random_floats(size_t(part.m * part.lda), 4);
        for (int64_t i = 0; i < part.m && !transpose_b; ++i) {
          // the probabilities of the keys past the length
          std::fill(a.begin() + i * part.lda + std::min(length, part.k),
                    a.begin() + i * part.lda + part.k, 0.0f);
        }
        const std::vector<uint16_t> a16 = to_bf16(a);
        if (type == POSENC_BF16) a = from_bf16(a16);
        std::vector<float> out(size_t(part.m * part.ldc));
        const auto want = naive_matmul(part, a.data(), b.data(), out.data());
        matmul(part, type == POSENC_BF16 ? static_cast<const void*>(a16.data()) : a.data(),
               packed.data(), out.data());
        ASSERT_TRUE(all_close(out.data(), want, 1e-4, 1e-4));
      }
      // oneDNN's brgemm lays out fewer keys as a leading part of more, but
      // for values of at most 64 columns only; packed plain, the values'
      // rows (spread alike, or not) lie where they lie for more keys.
      if ((runs_brgemm(type) && operand.columns <= 64) || (packs_b_plain(type) && !transpose_b)) {
        EXPECT_GT(served, 0);
      }
    }
  }
}

// matmul_on_packed_b runs a GEMM over fewer rows of a packed B than were
// packed (a causal block's values, a sequence's length) where B's layout
// serves it whole or one column block at a time: values of 96, 128, 192
// and 256 columns packed for a dense C (as the attention's accumulator),
// fp32 and bf16, accumulating or not, into a C with padded rows (the
// padding untouched). Where nothing serves, it writes nothing.
TEST(Matmul, PackedBServesFewerRowsByColumnBlocks) {
  const int64_t length = 100, zeroed = 128;  // rows past length NaN, then zeroed to 128
  for (posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (int64_t columns : {int64_t(96), int64_t(128), int64_t(192), int64_t(256)}) {
      for (bool accumulate : {false, true}) {
        MatmulShape whole = values_gemm(64, 512, columns, type);
        whole.alpha = 0.5f;
        whole.accumulate = accumulate;
        std::vector<float> b;
        std::vector<uint8_t> packed;
        try {
          packed = packed_b_past_length(whole, length, zeroed, b);
        } catch (const std::exception& e) {
          GTEST_SKIP() << "no bf16 GEMM on this CPU: " << e.what();
        }
        if (packed.empty()) continue;  // oneDNN reads B as stored here
        int by_column_blocks = 0;
        for (int64_t rows : {int64_t(128), int64_t(96), int64_t(64), int64_t(32), int64_t(112),
                             int64_t(100)}) {
          MatmulShape part = whole;
          part.k = rows;
          part.lda = rows;
          part.ldc = part.n + 5;
          SCOPED_TRACE(testing::Message() << (type == POSENC_BF16 ? "bf16" : "f32") << " columns "
                                          << columns << " accumulate " << accumulate
                                          << " rows " << rows);
          std::vector<float> a = random_floats(size_t(part.m * part.lda), 4);
          for (int64_t i = 0; i < part.m; ++i) {  // the probabilities past the length
            std::fill(a.begin() + i * part.lda + std::min(length, rows),
                      a.begin() + i * part.lda + rows, 0.0f);
          }
          const std::vector<uint16_t> a16 = to_bf16(a);
          if (type == POSENC_BF16) a = from_bf16(a16);
          std::vector<float> out = random_floats(size_t(part.m * part.ldc), 9);
          const std::vector<float> before = out;
          auto want = naive_matmul(part, a.data(), b.data(), out.data());
          for (int64_t i = 0; i < part.m; ++i) {  // the rows' padding stays as it was
            for (int64_t j = part.n; j < part.ldc; ++j) {
              want[size_t(i * part.ldc + j)] = before[size_t(i * part.ldc + j)];
            }
          }
          if (!matmul_on_packed_b(part, whole,
                                  type == POSENC_BF16 ? static_cast<const void*>(a16.data())
                                                      : a.data(),
                                  packed.data(), out.data())) {
            EXPECT_EQ(out, before) << "nothing written where nothing serves";
            continue;
          }
          by_column_blocks += !packed_b_serves(part, whole);
          ASSERT_TRUE(all_close(out.data(), want, 1e-4, 1e-4));
        }
        // brgemm's blocks are 16 rows (fp32) or 32 (bf16) of 64 columns:
        // 128, 96, 64 and 32 rows serve, one column block at a time.
        if (runs_brgemm(type) && columns % 64 == 0 && columns > 64) {
          EXPECT_GE(by_column_blocks, 4);
        }
      }
    }
  }
}

// A dry run outside a region prepares what matmul_on_packed_b needs in
// every slot of the region (its column blocks' primitives and output
// copy): slot 1 then runs it inside the region, where a miss would throw,
// and gets the naive loop's values.
TEST(Matmul, ColumnBlocksArePreparedForEverySlot) {
  if (!runs_brgemm(POSENC_F32)) GTEST_SKIP() << "oneDNN packs B plain here";
  const MatmulShape whole = values_gemm(64, 256, 128, POSENC_F32);
  std::vector<float> b;
  const std::vector<uint8_t> packed = packed_b_past_length(whole, whole.k, whole.k, b);
  ASSERT_FALSE(packed.empty());
  MatmulShape part = whole;
  part.k = part.lda = 128;
  ASSERT_FALSE(packed_b_serves(part, whole)) << "served without column blocks";
  const std::vector<float> a = random_floats(size_t(part.m * part.lda), 4);
  std::vector<float> out(size_t(part.m * part.ldc));
  const GemmSlots slots(2);
  {
    const GemmSlots::Use dry(slots, 0, false, true);
    ASSERT_TRUE(matmul_on_packed_b(part, whole, a.data(), packed.data(), out.data()));
  }
  {
    const GemmSlots::Use in_region(slots, 1, true);
    EXPECT_NO_THROW(matmul_on_packed_b(part, whole, a.data(), packed.data(), out.data()));
  }
  EXPECT_TRUE(all_close(out.data(), naive_matmul(part, a.data(), b.data(), out.data()), 1e-4,
                        1e-4));
}

// Where oneDNN lays a packed B out plain (its gemm, without brgemm: the
// AVX2 path), rows that would lie a multiple of 1 KiB apart are 64 bytes
// further apart (rows_spread): the attention's keys, transposed to
// [head_dim, keys], would otherwise fall on the same cache sets.
// B as stored is not copied to spread its rows.
TEST(Matmul, PlainPackedRowsAreSpreadOffTheCacheSets) {
  if (!packs_b_plain(POSENC_F32)) GTEST_SKIP() << "oneDNN packs B in blocks here";
  MatmulShape keys = dense_a_bt(64, 1024, 64);
  keys.b_packed = true;
  // [k, n] rows of 1024 + 16 floats.
  EXPECT_EQ(packed_b_bytes(keys), size_t(keys.k * (keys.n + 16)) * sizeof(float));
  MatmulShape values = dense_a_bt(64, 256, 1024);
  values.transpose_b = false;  // dense [k, n]: read as stored
  values.ldb = values.n;
  values.b_packed = true;
  EXPECT_EQ(packed_b_bytes(values), 0u);
}

// A thread's record that it prepared a problem's GEMMs goes stale when it
// releases its GEMM slots, which held what the preparation made.
TEST(Matmul, ReleasedSlotsMakePreparedRecordsStale) {
  using Problem = PreparedProblem<struct ReleaseTestTag, 1>;
  const auto recorded = [](int64_t key) {
    const GemmSlots gemms(1);
    return Problem({key}, gemms).before(gemms);
  };
  const auto remember = [](int64_t key) {
    const GemmSlots gemms(1);
    Problem({key}, gemms).remember(gemms);
  };
  remember(7);
  EXPECT_TRUE(recorded(7));
  EXPECT_FALSE(recorded(8));
  release_gemm_slots();
  EXPECT_FALSE(recorded(7));
  remember(7);
  EXPECT_TRUE(recorded(7));
}

// A call that came to hold more shapes than a record keeps is remembered
// all the same: the next call skips its dry run (its region finds the shapes
// in the cache). (It was not, and every call ran its dry run.)
TEST(Matmul, AProblemOfManyShapesIsRememberedWithoutThem) {
  using Problem = PreparedProblem<struct ManyShapesTestTag, 1>;
  const int64_t capacity = matmul_cache_capacity();
  set_matmul_cache_capacity(capacity + 100);  // no shape dropped: that makes records stale
  {
    const GemmSlots gemms(1);
    const Problem problem({3}, gemms);
    for (int64_t n = 1; n <= 40; ++n) gemms.prepare(dense_a_bt(2, n, 3));
    problem.remember(gemms);
  }
  const GemmSlots gemms(1);
  EXPECT_TRUE(Problem({3}, gemms).before(gemms));
  set_matmul_cache_capacity(capacity);
}

// A call that skips preparing, its problem prepared by an earlier call,
// holds the shapes that call held: dropped from a cache of one entry after
// it began, they are still found by its region's threads (which missed them
// and left their tasks to the calling thread, which made them again).
TEST(Matmul, AProblemPreparedBeforeHoldsItsShapes) {
  using Problem = PreparedProblem<struct HoldTestTag, 1>;
  const MatmulShape shapes[] = {dense_a_bt(5, 7, 3), dense_a_bt(6, 9, 4)};
  const auto a = random_floats(6 * 4, 1), b = random_floats(9 * 4, 2);
  std::vector<float> out[2] = {std::vector<float>(6 * 9), std::vector<float>(6 * 9)};
  const auto multiply = [&](int64_t task) {
    matmul(shapes[task], a.data(), b.data(), out[task].data());
  };
  {
    const GemmSlots gemms(2);
    const Problem problem({1}, gemms);
    for (const MatmulShape& s : shapes) gemms.prepare(s);
    problem.remember(gemms);
  }
  const int64_t capacity = matmul_cache_capacity();
  const GemmSlots gemms(2);
  ASSERT_TRUE(Problem({1}, gemms).before(gemms));
  set_matmul_cache_capacity(1);
  matmul(dense_a_bt(2, 2, 2), a.data(), b.data(), out[0].data());  // the one entry left
  const int64_t evictions = matmul_cache_evictions();
  parallel_for(2, 2, multiply);
  EXPECT_EQ(matmul_cache_evictions(), evictions) << "a shape was made again";
  set_matmul_cache_capacity(capacity);
  for (int task = 0; task < 2; ++task) {
    const auto want = naive_matmul(shapes[task], a.data(), b.data(), nullptr);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[task][i], want[i], 1e-5);
  }
}

TEST(Matmul, ManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      const Case c{1, 8 + t, 16 + 3 * t, 32, true, false, false, 1.0f};
      const MatmulShape s = shape_of(c);
      const auto a = random_floats(size_t(s.batch_stride_a), uint32_t(t));
      const auto b = random_floats(size_t(c.n * s.ldb), uint32_t(t + 100));
      for (int iter = 0; iter < 50; ++iter) {
        std::vector<float> out(size_t(s.batch_stride_c), 0.0f);
        matmul(s, a.data(), b.data(), out.data());
        const auto want = naive_matmul(s, a.data(), b.data(), nullptr);
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            const size_t at = size_t(i * s.ldc + j);
            if (std::abs(out[at] - want[at]) > 1e-4) ++failures[size_t(t)];
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace posenc::test

namespace posenc::test {
namespace {

// A regression guard: descriptors posenc builds must keep oneDNN off its
// slow reference implementation where it has optimized ones.
TEST(Matmul, UsesAnOptimizedImplementation) {
#if defined(__x86_64__)
  EXPECT_EQ(std::string(onednn_matmul_impl(POSENC_F32)).rfind("ref", 0), std::string::npos)
      << onednn_matmul_impl(POSENC_F32);
#else
  GTEST_SKIP() << "oneDNN's aarch64 implementations vary by build";
#endif
}

}  // namespace
}  // namespace posenc::test
