// The decode kernels of the fused attention (a few query rows against keys
// and values read as stored) on every ISA path, fp32 and bf16, against double
// loops: row counts across the 4-row tiles, key counts across the key tiles,
// head sizes with tails of every batch width, strides wider than a row, and
// nothing written outside the rows and columns asked for.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/kernel_registry.hpp"

namespace posenc::test {
namespace {

constexpr float kGuard = 12345.0f;
constexpr int64_t kRows[] = {1, 2, 3, 4, 5, 7, 8, 12, 13, 49, 64};
// (Tails of 8 and 16 fp32 lanes and of 32 bf16, odd and even.)
constexpr int64_t kDims[] = {1, 5, 16, 31, 33, 62, 63, 64, 96, 128, 129, 300};

// The bf16 decode kernels of a path: the portable ones, then those with
// AVX512-BF16's pair products where the path has them and the CPU can run
// them, whose values product rounds the probabilities to bf16.
struct Bf16Decode {
  decltype(posenc::AttentionKernels::decode_scores_bf16) scores;
  decltype(posenc::AttentionKernels::decode_values_bf16) values;
  bool rounds_probs;
};

class DecodeProducts : public IsaTest {
 protected:
  const posenc::AttentionKernels& attention() const { return kernels().attention; }
  std::vector<Bf16Decode> bf16_decodes() const {
    std::vector<Bf16Decode> decodes = {
        {attention().decode_scores_bf16, attention().decode_values_bf16, false}};
    const posenc::AttentionKernels& for_cpu = kernel_table_for_cpu(GetParam())->attention;
    if (for_cpu.decode_scores_bf16 != attention().decode_scores_bf16) {
      decodes.push_back({for_cpu.decode_scores_bf16, for_cpu.decode_values_bf16, true});
    }
    return decodes;
  }
};

// The probabilities a values product multiplies: as given, or rounded to bf16.
std::vector<float> probs_used(const std::vector<float>& probs, bool rounds_probs) {
  return rounds_probs ? from_bf16(to_bf16(probs)) : probs;
}

// `rows` rows of `dim` random values `ld` apart, and NaN in the columns
// past dim and in one row more, which the kernels must not read; for bf16
// their bf16 bits. `exact` are the values the kernels read (bf16 ones
// rounded).
struct Operand {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  std::vector<float> exact;

  Operand(int64_t rows, int64_t dim, int64_t ld, uint32_t seed, bool as_bf16)
      : f32(unread_as_nan(random_floats(size_t((rows + 1) * ld), seed), rows, dim, ld)),
        bf16(to_bf16(f32)),
        exact(as_bf16 ? from_bf16(bf16) : f32) {}

 private:
  static std::vector<float> unread_as_nan(std::vector<float> x, int64_t rows, int64_t dim,
                                          int64_t ld) {
    for (int64_t i = 0; i < (rows + 1) * ld; ++i) {
      if (i / ld == rows || i % ld >= dim) x[size_t(i)] = NAN;
    }
    return x;
  }
};

// sum_i a[i * stride_a] b[i * stride_b] over i < n in double, and the sum of
// the products' absolute values.
struct ExactDot {
  double sum = 0.0, magnitude = 0.0;
};
ExactDot exact_dot(const float* a, int64_t stride_a, const float* b, int64_t stride_b, int64_t n) {
  ExactDot dot;
  for (int64_t i = 0; i < n; ++i) {
    const double product = double(a[i * stride_a]) * double(b[i * stride_b]);
    dot.sum += product;
    dot.magnitude += std::fabs(product);
  }
  return dot;
}

// An fp32 accumulation of n products of values below `magnitude` (their sum
// of absolute products) differs from the exact sum by at most about n
// roundings of it.
double accumulation_bound(int64_t n, double magnitude) {
  return 2.0 * double(n) * FLT_EPSILON * magnitude + 1e-30;
}

TEST_P(DecodeProducts, ScoresMatchDoubleLoops) {
  const float alpha = 0.37f;
  const std::vector<Bf16Decode> bf16_kernels = bf16_decodes();
  for (size_t variant = 0; variant <= bf16_kernels.size(); ++variant) {
    const bool bf16 = variant > 0;
    for (int64_t rows : kRows) {
      for (int64_t keys : {1, 3, 4, 15, 16, 17, 32, 33, 64, 65, 100}) {
        for (int64_t dim : kDims) {
          SCOPED_TRACE(testing::Message()
                       << (bf16 ? "bf16 kernel " + std::to_string(variant) : "f32") << " rows "
                       << rows << " keys " << keys << " dim " << dim);
          const int64_t ldq = dim + 3, ldk = dim + 5, ld_scores = keys + 2;
          const Operand q(rows, dim, ldq, uint32_t(rows * 1000 + dim), bf16);
          const Operand k(keys, dim, ldk, uint32_t(keys * 1000 + dim + 7), bf16);
          // One row more than asked for: the kernel must not write it.
          std::vector<float> scores(size_t((rows + 1) * ld_scores), kGuard);
          if (bf16) {
            bf16_kernels[variant - 1].scores(q.bf16.data(), ldq, rows, k.bf16.data(), ldk, keys,
                                             dim, alpha, scores.data(), ld_scores);
          } else {
            attention().decode_scores_f32(q.f32.data(), ldq, rows, k.f32.data(), ldk, keys, dim,
                                          alpha, scores.data(), ld_scores);
          }
          for (int64_t r = 0; r <= rows; ++r) {
            for (int64_t j = 0; j < ld_scores; ++j) {
              const float got = scores[size_t(r * ld_scores + j)];
              if (r == rows || j >= keys) {
                ASSERT_EQ(got, kGuard) << "wrote row " << r << " column " << j;
                continue;
              }
              const ExactDot want =
                  exact_dot(&q.exact[size_t(r * ldq)], 1, &k.exact[size_t(j * ldk)], 1, dim);
              ASSERT_NEAR(got, alpha * want.sum, alpha * accumulation_bound(dim, want.magnitude))
                  << "row " << r << " key " << j;
            }
          }
        }
      }
    }
  }
}

TEST_P(DecodeProducts, ValuesMatchDoubleLoops) {
  const std::vector<Bf16Decode> bf16_kernels = bf16_decodes();
  for (size_t variant = 0; variant <= bf16_kernels.size(); ++variant) {
    const bool bf16 = variant > 0;
    const bool rounds_probs = bf16 && bf16_kernels[variant - 1].rounds_probs;
    for (bool accumulate : {false, true}) {
      for (int64_t rows : kRows) {
        for (int64_t keys : {1, 5, 40, 63, 64, 65, 130}) {
          // (123: tiles of 8, 4, 2 and 1 batches of 8 lanes and a partial
          // batch, as one row takes them.)
          for (int64_t dim : {1, 7, 16, 17, 33, 50, 62, 64, 65, 96, 123, 128, 200}) {
            SCOPED_TRACE(testing::Message()
                         << (bf16 ? "bf16 kernel " + std::to_string(variant) : "f32")
                         << (accumulate ? " accumulate" : "") << " rows " << rows << " keys "
                         << keys << " dim " << dim);
            const int64_t ld_probs = keys + 1, ldv = dim + 3, ld_acc = dim + 4;
            // Probabilities in [0, 1), as the softmax leaves them, and NaN
            // past `keys`, which must not be read.
            std::vector<float> probs =
                random_floats(size_t(rows * ld_probs), uint32_t(rows * 100 + keys), 0.0f, 1.0f);
            for (int64_t r = 0; r < rows; ++r) probs[size_t(r * ld_probs + keys)] = NAN;
            const Operand v(keys, dim, ldv, uint32_t(keys * 1000 + dim), bf16);
            std::vector<float> acc = random_floats(size_t((rows + 1) * ld_acc), 5);
            for (int64_t r = 0; r <= rows; ++r) {
              for (int64_t c = 0; c < ld_acc; ++c) {
                if (r == rows || c >= dim) acc[size_t(r * ld_acc + c)] = kGuard;
              }
            }
            const std::vector<float> before = acc;
            const std::vector<float> p = probs_used(probs, rounds_probs);
            if (bf16) {
              bf16_kernels[variant - 1].values(probs.data(), ld_probs, rows, v.bf16.data(), ldv,
                                               keys, dim, accumulate, acc.data(), ld_acc);
            } else {
              attention().decode_values_f32(probs.data(), ld_probs, rows, v.f32.data(), ldv, keys,
                                            dim, accumulate, acc.data(), ld_acc);
            }
            for (int64_t r = 0; r <= rows; ++r) {
              for (int64_t c = 0; c < ld_acc; ++c) {
                const size_t at = size_t(r * ld_acc + c);
                if (r == rows || c >= dim) {
                  ASSERT_EQ(acc[at], kGuard) << "wrote row " << r << " column " << c;
                  continue;
                }
                const ExactDot dot =
                    exact_dot(&p[size_t(r * ld_probs)], 1, &v.exact[size_t(c)], ldv, keys);
                const double start = accumulate ? double(before[at]) : 0.0;
                ASSERT_NEAR(acc[at], start + dot.sum,
                            accumulation_bound(keys + 1, std::fabs(start) + dot.magnitude))
                    << "row " << r << " column " << c;
              }
            }
          }
        }
      }
    }
  }
}

// The AVX512-BF16 table's bf16 decode kernels are its own where the path is
// AVX-512 and the CPU has AVX512-BF16 (elsewhere the tests above run only
// the portable ones).
TEST_P(DecodeProducts, PairKernelsWhereTheCpuHasAvx512Bf16) {
  if (GetParam() != POSENC_ISA_AVX512 || !cpu_has(kCpuAvx512Bf16)) {
    GTEST_SKIP() << "no AVX512-BF16 decode kernels on this path or CPU";
  }
  const std::vector<Bf16Decode> decodes = bf16_decodes();
  ASSERT_EQ(decodes.size(), 2u);
  EXPECT_NE(decodes[1].values, decodes[0].values);
}

// Long rows: 1030 keys of 128 (a decode split's key block and a tail), the
// values the keys' bf16 again.
TEST_P(DecodeProducts, LongRows) {
  const int64_t rows = 4, keys = 1030, dim = 128;
  const Operand q(rows, dim, dim, 1, true), k(keys, dim, dim, 2, true);
  for (const Bf16Decode& decode : bf16_decodes()) {
    std::vector<float> scores(size_t(rows * keys));
    decode.scores(q.bf16.data(), dim, rows, k.bf16.data(), dim, keys, dim, 1.0f, scores.data(),
                  keys);
    std::vector<float> probs(scores.size());
    for (size_t i = 0; i < probs.size(); ++i) probs[i] = std::exp(scores[i] / 16.0f);
    std::vector<float> acc(size_t(rows * dim));
    decode.values(probs.data(), keys, rows, k.bf16.data(), dim, keys, dim, false, acc.data(), dim);
    const std::vector<float> p = probs_used(probs, decode.rounds_probs);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < keys; ++j) {
        const ExactDot score =
            exact_dot(&q.exact[size_t(r * dim)], 1, &k.exact[size_t(j * dim)], 1, dim);
        ASSERT_NEAR(scores[size_t(r * keys + j)], score.sum,
                    accumulation_bound(dim, score.magnitude));
      }
      for (int64_t c = 0; c < dim; ++c) {
        const ExactDot want = exact_dot(&p[size_t(r * keys)], 1, &k.exact[size_t(c)], dim, keys);
        ASSERT_NEAR(acc[size_t(r * dim + c)], want.sum, accumulation_bound(keys, want.magnitude));
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(DecodeProducts);

}  // namespace
}  // namespace posenc::test
