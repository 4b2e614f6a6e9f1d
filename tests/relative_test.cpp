// Position logits on every ISA path: against the double reference loops, and
// the skew bit for bit against the pad/reshape sequence of
// bottleneck-transformer-pytorch (docs/design.md section 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/relative.hpp"
#include "runtime/kernel_registry.hpp"

namespace posenc::test {
namespace {

namespace ref = posenc::reference;

// Inputs are uniform in [-1, 1): a logit sums `dim` products, and oneDNN's
// fp32 accumulation stays within a few ulp per term of the double sum.
double dot_atol(int64_t dim) { return 1e-6 + 4e-7 * double(dim); }
constexpr double kRtol = 1e-5;

struct Problem1d {
  int64_t batch, heads, queries, keys, dim;
  int64_t table_heads;  // 1 or heads
  ref::RelativeOptions options;

  int64_t table_rows() const {
    return options.clip > 0 ? 2 * options.clip + 1
                            : options.query_offset + queries + keys - 1;
  }
};

::testing::Message describe(const Problem1d& p) {
  return ::testing::Message() << "B " << p.batch << " H " << p.heads << " Tq " << p.queries
                              << " Tk " << p.keys << " d " << p.dim << " table_heads "
                              << p.table_heads << " offset " << p.options.query_offset
                              << " clip " << p.options.clip << " causal " << p.options.causal;
}

// Runs posenc_relative_logits_1d on random inputs and compares it with the
// reference; returns the output for further checks.
std::vector<float> check_relative_1d(posenc_context* context, const Problem1d& p,
                                     uint32_t seed) {
  SCOPED_TRACE(describe(p));
  const std::vector<float> q =
      random_floats(size_t(p.batch * p.heads * p.queries * p.dim), seed);
  const std::vector<float> table =
      random_floats(size_t(p.table_heads * p.table_rows() * p.dim), seed + 1);
  const size_t count = size_t(p.batch * p.heads * p.queries * p.keys);
  GuardedFloats out(count);
  const posenc_relative_options options{p.options.query_offset, p.options.clip,
                                        p.options.causal ? 1 : 0};
  EXPECT_EQ(posenc_relative_logits_1d(context, p.batch, p.heads, p.queries, p.keys, p.dim,
                                      q.data(), table.data(), p.table_heads, &options,
                                      out.data()),
            POSENC_OK)
      << posenc_last_error();
  EXPECT_TRUE(all_close(out.data(),
                        ref::relative_logits_1d(p.batch, p.heads, p.queries, p.keys, p.dim,
                                                q.data(), table.data(), p.table_heads,
                                                p.options),
                        dot_atol(p.dim), kRtol));
  EXPECT_TRUE(out.guards_intact());
  return std::vector<float>(out.data(), out.data() + count);
}

const int64_t kLengths[] = {1, 2, 3, 7, 64, 65, 257};
const int64_t kDims[] = {1, 8, 64, 80, 128};

class AbsoluteLogits : public IsaTest {};

TEST_P(AbsoluteLogits, MatchesReference) {
  const std::tuple<int64_t, int64_t> sizes[] = {{1, 1}, {2, 3}, {7, 64}, {65, 7}, {257, 65}};
  uint32_t seed = 1;
  for (auto [queries, keys] : sizes) {
    for (int64_t dim : kDims) {
      for (int64_t table_heads : {1, 3}) {
        SCOPED_TRACE(testing::Message() << "Tq " << queries << " Tk " << keys << " d " << dim
                                        << " table_heads " << table_heads);
        const int64_t batch = 2, heads = 3;
        const auto q = random_floats(size_t(batch * heads * queries * dim), seed++);
        const auto table = random_floats(size_t(table_heads * keys * dim), seed++);
        GuardedFloats out(size_t(batch * heads * queries * keys));
        ASSERT_EQ(posenc_absolute_logits(context(), batch, heads, queries, keys, dim, q.data(),
                                         table.data(), table_heads, out.data()),
                  POSENC_OK)
            << posenc_last_error();
        EXPECT_TRUE(all_close(out.data(),
                              ref::absolute_logits(batch, heads, queries, keys, dim, q.data(),
                                                   table.data(), table_heads),
                              dot_atol(dim), kRtol));
        EXPECT_TRUE(out.guards_intact());
      }
    }
  }
}

class RelToAbs : public IsaTest {};

// Values with distinct bit patterns (negative zero, NaN payloads, denormals)
// so that any arithmetic or wrong source would show.
std::vector<float> bit_patterns(size_t count, uint32_t seed) {
  std::vector<float> values = random_floats(count, seed);
  for (size_t i = 0; i < count; i += 7) values[i] = -0.0f;
  for (size_t i = 3; i < count; i += 11) {
    values[i] = float_from_bits(0x7FC00000u | uint32_t(i & 0x3FFFFF));
  }
  for (size_t i = 5; i < count; i += 13) values[i] = std::numeric_limits<float>::denorm_min();
  return values;
}

TEST_P(RelToAbs, BitwiseEqualsPadReshape) {
  // 8 x 1030 x 1030 floats pass 32 MiB: written with non-temporal stores.
  for (int64_t length : {1, 2, 3, 7, 64, 65, 257, 1030}) {
    const int64_t matrices = length > 257 ? 8 : 6, batch = 2;
    SCOPED_TRACE(testing::Message() << "length " << length);
    const auto in = bit_patterns(size_t(matrices * length * (2 * length - 1)), uint32_t(length));
    GuardedFloats out(size_t(matrices * length * length));
    ASSERT_EQ(posenc_rel_to_abs(context(), batch, matrices / batch, length, in.data(),
                                out.data()),
              POSENC_OK)
        << posenc_last_error();
    const std::vector<float> want = ref::pad_reshape_rel_to_abs(matrices, length, in.data());
    EXPECT_EQ(std::memcmp(out.data(), want.data(), want.size() * sizeof(float)), 0);
    EXPECT_TRUE(out.guards_intact());
  }
}

TEST_P(RelToAbs, IsTheRelativeLogitsSkew) {
  // The skew of q R^T over all 2T-1 distances is the 1D relative logits.
  const int64_t heads = 2, length = 33, dim = 16;
  const auto q = random_floats(size_t(heads * length * dim), 5);
  const auto table = random_floats(size_t((2 * length - 1) * dim), 6);
  std::vector<float> scores(size_t(heads * length * (2 * length - 1)));
  std::vector<float> skewed(size_t(heads * length * length));
  ASSERT_EQ(posenc_absolute_logits(context(), 1, heads, length, 2 * length - 1, dim, q.data(),
                                   table.data(), 1, scores.data()),
            POSENC_OK);
  ASSERT_EQ(posenc_rel_to_abs(context(), 1, heads, length, scores.data(), skewed.data()),
            POSENC_OK);
  EXPECT_TRUE(all_close(skewed.data(),
                        ref::relative_logits_1d(1, heads, length, length, dim, q.data(),
                                                table.data(), 1, {}),
                        dot_atol(dim), kRtol));
}

class RelativeLogits1d : public IsaTest {};

TEST_P(RelativeLogits1d, SquareSharedAndPerHead) {
  uint32_t seed = 10;
  size_t d = 0;
  for (int64_t length : kLengths) {
    for (int64_t table_heads : {1, 3}) {
      const int64_t dim = kDims[d++ % std::size(kDims)];
      check_relative_1d(context(), {2, 3, length, length, dim, table_heads, {}}, seed++);
    }
  }
}

TEST_P(RelativeLogits1d, EveryHeadDim) {
  for (int64_t dim : kDims) check_relative_1d(context(), {1, 2, 65, 65, dim, 2, {}}, 20);
}

TEST_P(RelativeLogits1d, QueriesAndKeysDiffer) {
  const std::tuple<int64_t, int64_t> sizes[] = {{1, 257}, {5, 70}, {70, 5}, {130, 64}};
  for (auto [queries, keys] : sizes) {
    check_relative_1d(context(), {2, 2, queries, keys, 8, 1, {}}, 30);
    check_relative_1d(context(), {1, 2, queries, keys, 80, 2, {3, 0, false}}, 31);
  }
}

// Many query tiles (64 queries) and more than one skewed GEMM per row (512
// columns).
TEST_P(RelativeLogits1d, LargeSequence) {
  check_relative_1d(context(), {1, 1, 1030, 1030, 64, 1, {}}, 40);
  check_relative_1d(context(), {1, 2, 130, 2100, 8, 2, {0, 0, true}}, 41);
}

// Outputs of 32 MiB and more are gathered from rectangular tiles (64 x
// 2048) with non-temporal stores (dim 1 keeps the reference cheap).
TEST_P(RelativeLogits1d, StreamedOutput) {
  check_relative_1d(context(), {1, 2, 1030, 4100, 1, 2, {}}, 42);
  check_relative_1d(context(), {1, 2, 1030, 4100, 1, 1, {100, 3000, true}}, 43);
}

class RelativeGatherKernels : public IsaTest {};

// `count` floats from a cache-line (64-byte) boundary on, so that an offset
// from data() is one within a line: the streaming kernels take other paths
// by it.
class LineAlignedFloats {
 public:
  explicit LineAlignedFloats(size_t count)
      : storage_(count + kLineFloats),
        data_(storage_.data() +
              (kLineBytes - reinterpret_cast<uintptr_t>(storage_.data()) % kLineBytes) %
                  kLineBytes / sizeof(float)),
        count_(count) {}
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return count_; }
  void fill(float value) { std::fill(data_, data_ + count_, value); }
  bool operator==(const LineAlignedFloats& other) const {
    return count_ == other.count_ && std::memcmp(data_, other.data_, count_ * sizeof(float)) == 0;
  }

 private:
  static constexpr size_t kLineBytes = 64, kLineFloats = kLineBytes / sizeof(float);
  std::vector<float> storage_;
  float* data_;
  size_t count_;
};

// The streaming gather writes exactly what the ordinary one does, at every
// alignment of the output, on the ISA's own path.
TEST_P(RelativeGatherKernels, StreamingGatherEqualsGather) {
  const posenc::RelativeKernels& k = kernels().relative;
  const std::vector<float> s = random_floats(200, 7);
  LineAlignedFloats want(300), got(300);
  for (int64_t n : {1, 5, 37, 200}) {
    for (int64_t shift : {-50, -3, 0, 4, 150}) {
      for (int64_t count : {0, 1, 3, 16, 17, 100, 250}) {
        for (int64_t visible : {int64_t(0), count / 3, count}) {
          for (int64_t misaligned = 0; misaligned < 16; misaligned += 3) {
            SCOPED_TRACE(testing::Message() << "n " << n << " shift " << shift << " count "
                                            << count << " visible " << visible << " at +"
                                            << misaligned);
            want.fill(7.0f);
            got.fill(7.0f);
            k.gather_row(s.data(), n, shift, visible, want.data() + misaligned, count);
            k.gather_row_stream(s.data(), n, shift, visible, got.data() + misaligned, count);
            ASSERT_TRUE(want == got);
            for (int64_t c = 0; c < visible; ++c) {
              ASSERT_EQ(want.data()[misaligned + c],
                        s[size_t(std::clamp<int64_t>(c + shift, 0, n - 1))]);
            }
          }
        }
      }
    }
  }
}

TEST_P(RelativeGatherKernels, StreamingBroadcastSumEqualsBroadcastSum) {
  const posenc::RelativeKernels& k = kernels().relative;
  // Widths and heights past the streamed kernel's stage of 2048 floats: a
  // row of several stages, and segments longer than a stage.
  const std::vector<float> h = random_floats(70, 8), w = random_floats(2100, 9);
  LineAlignedFloats want(7000), got(7000);
  for (int64_t h_count : {1, 3, 40, 70}) {
    for (int64_t w_count : {1, 5, 16, 17, 40, 97, 2047, 2048, 2100}) {
      if (h_count * w_count + 16 > int64_t(want.size())) continue;
      // Line-aligned, batch-aligned on each ISA, and neither.
      for (int64_t misaligned : {0, 1, 4, 5, 8, 12, 15}) {
        SCOPED_TRACE(testing::Message() << h_count << "x" << w_count << " at +" << misaligned);
        want.fill(7.0f);
        got.fill(7.0f);
        k.broadcast_sum_row(h.data(), h_count, w.data(), w_count, want.data() + misaligned);
        k.broadcast_sum_row_stream(h.data(), h_count, w.data(), w_count,
                                   got.data() + misaligned);
        ASSERT_TRUE(want == got);
        ASSERT_EQ(want.data()[misaligned + h_count * w_count - 1],
                  h[size_t(h_count - 1)] + w[size_t(w_count - 1)]);
      }
    }
  }
  // No rows or no columns: nothing written.
  for (const auto& [h_count, w_count] : {std::pair<int64_t, int64_t>{0, 5}, {3, 0}}) {
    got.fill(7.0f);
    k.broadcast_sum_row_stream(h.data(), h_count, w.data(), w_count, got.data() + 5);
    ASSERT_TRUE(std::all_of(got.data(), got.data() + got.size(),
                            [](float value) { return value == 7.0f; }));
  }
}

TEST_P(RelativeLogits1d, Clipped) {
  for (int64_t length : {7, 64, 65}) {
    for (int64_t clip : {int64_t(1), int64_t(3), length - 1, length, length + 5}) {
      check_relative_1d(context(), {2, 2, length, length, 8, 2, {0, clip, false}}, 50);
    }
  }
  check_relative_1d(context(), {1, 2, 5, 90, 64, 1, {0, 4, false}}, 51);
  check_relative_1d(context(), {1, 1, 130, 1100, 8, 1, {0, 70, false}}, 52);
  check_relative_1d(context(), {1, 1, 130, 1100, 8, 1, {200, 1500, false}}, 53);
}

TEST_P(RelativeLogits1d, Causal) {
  for (int64_t length : {1, 2, 7, 65, 257}) {
    check_relative_1d(context(), {2, 2, length, length, 8, 1, {0, 0, true}}, 60);
  }
  check_relative_1d(context(), {1, 2, 65, 65, 64, 2, {0, 5, true}}, 61);
  check_relative_1d(context(), {1, 1, 130, 1100, 8, 1, {0, 2000, true}}, 62);
}

TEST_P(RelativeLogits1d, QueryOffset) {
  for (int64_t offset : {1, 5, 100}) {
    for (bool causal : {false, true}) {
      check_relative_1d(context(), {1, 2, 9, 120, 8, 2, {offset, 0, causal}}, 70);
      check_relative_1d(context(), {1, 2, 9, 120, 8, 2, {offset, 6, causal}}, 71);
      check_relative_1d(context(), {1, 1, 70, 70, 8, 1, {offset, 200, causal}}, 72);
    }
  }
}

// A causal decode step (one query at position T-1 against T keys, the same
// [2T-1, dim] table, shared or per head) gives the last row of the full
// computation.
TEST_P(RelativeLogits1d, DecodeStepIsLastRowOfFullSequence) {
  for (const auto& [clip, table_heads] :
       {std::pair<int64_t, int64_t>{0, 1}, {0, 2}, {3, 1}, {3, 2}}) {
    const int64_t length = 65, dim = 64, heads = 2;
    SCOPED_TRACE(testing::Message() << "clip " << clip << " table_heads " << table_heads);
    const auto q = random_floats(size_t(heads * length * dim), 80);
    const int64_t rows = clip > 0 ? 2 * clip + 1 : 2 * length - 1;
    const auto table = random_floats(size_t(table_heads * rows * dim), 81);
    std::vector<float> full(size_t(heads * length * length)), step(size_t(heads * length));
    posenc_relative_options options{0, clip, 1};
    ASSERT_EQ(posenc_relative_logits_1d(context(), 1, heads, length, length, dim, q.data(),
                                        table.data(), table_heads, &options, full.data()),
              POSENC_OK);
    std::vector<float> last_q(size_t(heads * dim));
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(&last_q[size_t(h * dim)], &q[size_t(((h + 1) * length - 1) * dim)],
                  size_t(dim) * sizeof(float));
    }
    options.query_offset = length - 1;
    ASSERT_EQ(posenc_relative_logits_1d(context(), 1, heads, 1, length, dim, last_q.data(),
                                        table.data(), table_heads, &options, step.data()),
              POSENC_OK)
        << posenc_last_error();
    for (int64_t h = 0; h < heads; ++h) {
      const float* want = &full[size_t(((h + 1) * length - 1) * length)];
      for (int64_t j = 0; j < length; ++j) {
        EXPECT_NEAR(step[size_t(h * length + j)], want[j], dot_atol(dim))
            << "h " << h << " j " << j;
      }
    }
  }
}

struct Map {
  int64_t height, width;
};
const Map kMaps[] = {{1, 1}, {1, 7}, {7, 1}, {7, 5}, {5, 7}, {14, 14}, {24, 40}};

struct Inputs2d {
  std::vector<float> q, row_table, column_table;
};

Inputs2d inputs_2d(int64_t batch, int64_t heads, Map map, int64_t dim, int64_t table_heads,
                   uint32_t seed) {
  return Inputs2d{
      random_floats(size_t(batch * heads * map.height * map.width * dim), seed),
      random_floats(size_t(table_heads * (2 * map.height - 1) * dim), seed + 1),
      random_floats(size_t(table_heads * (2 * map.width - 1) * dim), seed + 2)};
}

class RelativeLogits2d : public IsaTest {};

TEST_P(RelativeLogits2d, DecomposedMatchesReference) {
  size_t d = 0;
  for (Map map : kMaps) {
    for (int64_t table_heads : {1, 3}) {
      const int64_t batch = 2, heads = 3, dim = kDims[d++ % std::size(kDims)];
      const int64_t tokens = map.height * map.width;
      SCOPED_TRACE(testing::Message() << map.height << "x" << map.width << " d " << dim
                                      << " table_heads " << table_heads);
      const Inputs2d in = inputs_2d(batch, heads, map, dim, table_heads, uint32_t(d));
      GuardedFloats rel_h(size_t(batch * heads * tokens * map.height));
      GuardedFloats rel_w(size_t(batch * heads * tokens * map.width));
      ASSERT_EQ(posenc_relative_logits_2d_decomposed(
                    context(), batch, heads, map.height, map.width, dim, in.q.data(),
                    in.row_table.data(), in.column_table.data(), table_heads, rel_h.data(),
                    rel_w.data()),
                POSENC_OK)
          << posenc_last_error();
      const ref::Relative2d want = ref::relative_logits_2d_decomposed(
          batch, heads, map.height, map.width, dim, in.q.data(), in.row_table.data(),
          in.column_table.data(), table_heads);
      EXPECT_TRUE(all_close(rel_h.data(), want.rel_h, dot_atol(dim), kRtol));
      EXPECT_TRUE(all_close(rel_w.data(), want.rel_w, dot_atol(dim), kRtol));
      EXPECT_TRUE(rel_h.guards_intact());
      EXPECT_TRUE(rel_w.guards_intact());
    }
  }
}

TEST_P(RelativeLogits2d, FullBiasMatchesReference) {
  size_t d = 2;
  for (Map map : kMaps) {
    for (int64_t table_heads : {1, 2}) {
      const int64_t batch = map.height * map.width > 200 ? 1 : 2, heads = 2;
      const int64_t dim = kDims[d++ % std::size(kDims)];
      const int64_t tokens = map.height * map.width;
      SCOPED_TRACE(testing::Message() << map.height << "x" << map.width << " d " << dim
                                      << " table_heads " << table_heads);
      const Inputs2d in = inputs_2d(batch, heads, map, dim, table_heads, uint32_t(d + 100));
      GuardedFloats out(size_t(batch * heads * tokens * tokens));
      ASSERT_EQ(posenc_relative_logits_2d(context(), batch, heads, map.height, map.width, dim,
                                          in.q.data(), in.row_table.data(),
                                          in.column_table.data(), table_heads, out.data()),
                POSENC_OK)
          << posenc_last_error();
      EXPECT_TRUE(all_close(out.data(),
                            ref::relative_logits_2d(batch, heads, map.height, map.width, dim,
                                                    in.q.data(), in.row_table.data(),
                                                    in.column_table.data(), table_heads),
                            2 * dot_atol(dim), kRtol));
      EXPECT_TRUE(out.guards_intact());
    }
  }
}

// A 1xY map has only horizontal distances: its column logits are the 1D
// relative logits over Y tokens, and its row logits q . Rh[0].
TEST_P(RelativeLogits2d, SingleRowMapIsTheOneDimensionalCase) {
  const int64_t width = 9, dim = 8, heads = 2;
  const Inputs2d in = inputs_2d(1, heads, {1, width}, dim, 1, 90);
  std::vector<float> rel_h(size_t(heads * width)), rel_w(size_t(heads * width * width));
  std::vector<float> one_d(rel_w.size());
  ASSERT_EQ(posenc_relative_logits_2d_decomposed(context(), 1, heads, 1, width, dim,
                                                 in.q.data(), in.row_table.data(),
                                                 in.column_table.data(), 1, rel_h.data(),
                                                 rel_w.data()),
            POSENC_OK);
  ASSERT_EQ(posenc_relative_logits_1d(context(), 1, heads, width, width, dim, in.q.data(),
                                      in.column_table.data(), 1, nullptr, one_d.data()),
            POSENC_OK);
  for (size_t i = 0; i < rel_w.size(); ++i) EXPECT_NEAR(rel_w[i], one_d[i], dot_atol(dim));
  for (int64_t n = 0; n < heads * width; ++n) {  // Rh has the one row of distance 0
    double want = 0.0;
    for (int64_t c = 0; c < dim; ++c)
      want += double(in.q[size_t(n * dim + c)]) * in.row_table[size_t(c)];
    EXPECT_NEAR(rel_h[size_t(n)], want, dot_atol(dim)) << "query " << n;
  }
}

TEST(RelativeCppApi, WrappersRunAndThrow) {
  posenc::Context context;
  const int64_t length = 4, dim = 2;
  const std::vector<float> q(size_t(length * dim), 1.0f), table(size_t((2 * length - 1) * dim));
  std::vector<float> out(size_t(length * length));
  posenc::relative_logits_1d(context, 1, 1, length, length, dim, q.data(), table.data(), 1,
                             out.data(), {0, 0, true});
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[0], 0.0f);
  posenc::absolute_logits(context, 1, 1, length, length, dim, q.data(), table.data(), 1,
                          out.data());
  std::vector<float> scores(size_t(length * (2 * length - 1)), 2.0f);
  posenc::rel_to_abs(context, 1, 1, length, scores.data(), out.data());
  EXPECT_EQ(out[5], 2.0f);
  std::vector<float> rel_h(size_t(length * 2)), rel_w(size_t(length * 2)), bias(16);
  posenc::relative_logits_2d_decomposed(context, 1, 1, 2, 2, dim, q.data(), table.data(),
                                        table.data(), 1, rel_h.data(), rel_w.data());
  posenc::relative_logits_2d(context, 1, 1, 2, 2, dim, q.data(), table.data(), table.data(), 1,
                             bias.data());
  try {
    posenc::relative_logits_1d(context, 1, 2, length, length, dim, q.data(), table.data(), 3,
                               out.data());
    FAIL() << "expected posenc::Error";
  } catch (const posenc::Error& e) {
    EXPECT_EQ(e.status(), POSENC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("table_heads"), std::string::npos);
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AbsoluteLogits);
POSENC_INSTANTIATE_ISA_TESTS(RelToAbs);
POSENC_INSTANTIATE_ISA_TESTS(RelativeLogits1d);
// A bias of 32 MiB and more is written with non-temporal stores.
TEST_P(RelativeLogits2d, StreamedFullBias) {
  const int64_t heads = 2, height = 40, width = 56, dim = 1, tokens = height * width;
  const Inputs2d in = inputs_2d(1, heads, {height, width}, dim, heads, 95);
  GuardedFloats out(size_t(heads * tokens * tokens));
  ASSERT_EQ(posenc_relative_logits_2d(context(), 1, heads, height, width, dim, in.q.data(),
                                      in.row_table.data(), in.column_table.data(), heads,
                                      out.data()),
            POSENC_OK);
  EXPECT_TRUE(all_close(out.data(),
                        ref::relative_logits_2d(1, heads, height, width, dim, in.q.data(),
                                                in.row_table.data(), in.column_table.data(),
                                                heads),
                        2 * dot_atol(dim), kRtol));
  EXPECT_TRUE(out.guards_intact());
}

POSENC_INSTANTIATE_ISA_TESTS(RelativeLogits2d);
POSENC_INSTANTIATE_ISA_TESTS(RelativeGatherKernels);

// Count axes of 0 (batch, heads, queries, keys, length): POSENC_OK with NULL
// or real tensors, nothing written; the other arguments are still checked.
// The 2D map sides stay >= 1 (their tables have 2 size - 1 rows).
TEST(RelativeEmptyCalls, Logits1d) {
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  GuardedFloats q(256, 0.5f), table(256, 0.25f), out(256);
  float* o = out.data();
  struct Sizes {
    int64_t batch, heads, queries, keys;
  };
  for (const Sizes& s : {Sizes{0, 2, 5, 7}, Sizes{2, 0, 5, 7}, Sizes{2, 3, 0, 7}, Sizes{2, 3, 5, 0},
                         Sizes{0, 0, 0, 0}}) {
    for (bool null : {true, false}) {
      // A tensor with elements stays required; one without may be NULL.
      const float* qp = null && s.batch * s.heads * s.queries == 0 ? nullptr : q.data();
      const float* tp = null && s.keys == 0 ? nullptr : table.data();
      float* dst = null ? nullptr : o;
      EXPECT_EQ(
          posenc_absolute_logits(nullptr, s.batch, s.heads, s.queries, s.keys, 4, qp, tp, 1, dst),
          POSENC_OK)
          << posenc_last_error();
      // Per head: heads 0 leaves the table no elements.
      const float* tph = null && s.keys * s.heads == 0 ? nullptr : table.data();
      EXPECT_EQ(posenc_absolute_logits(nullptr, s.batch, s.heads, s.queries, s.keys, 4, qp, tph,
                                       s.heads, dst),
                POSENC_OK)
          << posenc_last_error();
      // The 1D table has queries + keys - 1 rows (none for 0 and 0); clipped 2K+1.
      const float* rp = null && s.queries + s.keys == 0 ? nullptr : table.data();
      EXPECT_EQ(posenc_relative_logits_1d(nullptr, s.batch, s.heads, s.queries, s.keys, 4, qp, rp,
                                          1, nullptr, dst),
                POSENC_OK)
          << posenc_last_error();
      const posenc_relative_options clipped{2, 3, 1};
      EXPECT_EQ(posenc_relative_logits_1d(nullptr, s.batch, s.heads, s.queries, s.keys, 4, qp,
                                          table.data(), 1, &clipped, dst),
                POSENC_OK)
          << posenc_last_error();
      const int64_t length = s.keys == 0 ? 0 : s.queries;  // an empty out
      EXPECT_EQ(
          posenc_rel_to_abs(nullptr, s.batch, s.heads, length,
                            null && s.batch * s.heads * length == 0 ? nullptr : q.data(), dst),
          POSENC_OK)
          << posenc_last_error();
    }
  }
  // Python's cases: no keys (a table of 5 + 0 - 1 rows) and no queries.
  EXPECT_EQ(posenc_relative_logits_1d(nullptr, 1, 2, 5, 0, 4, q.data(), table.data(), 1, nullptr,
                                      nullptr),
            POSENC_OK);
  EXPECT_EQ(posenc_relative_logits_1d(nullptr, 1, 2, 0, 10, 4, nullptr, table.data(), 1, nullptr,
                                      nullptr),
            POSENC_OK);
  EXPECT_TRUE(
      fails_with(posenc_absolute_logits(nullptr, 0, 2, 5, 7, 0, nullptr, table.data(), 1, nullptr),
                 kInvalid, "dim must be >= 1"));
  EXPECT_TRUE(
      fails_with(posenc_absolute_logits(nullptr, 0, 3, 5, 7, 4, nullptr, table.data(), 2, nullptr),
                 kInvalid, "table_heads"));
  EXPECT_TRUE(
      fails_with(posenc_absolute_logits(nullptr, 2, 3, 0, 7, 4, nullptr, nullptr, 1, nullptr),
                 POSENC_ERROR_NULL_POINTER, "table"));
  EXPECT_TRUE(fails_with(
      posenc_absolute_logits(nullptr, 2, 3, 0, 7, 4, nullptr, table.data(), 1, offset_bytes(o, 1)),
      kInvalid, "out"));
  EXPECT_TRUE(
      fails_with(posenc_absolute_logits(nullptr, 2, 3, -1, 7, 4, nullptr, table.data(), 1, nullptr),
                 kInvalid, "queries must be >= 0 (got -1)"));
  const posenc_relative_options bad_causal{0, 0, 2}, negative_offset{-1, 0, 0};
  EXPECT_TRUE(fails_with(posenc_relative_logits_1d(nullptr, 0, 2, 5, 7, 4, nullptr, table.data(), 1,
                                                   &bad_causal, nullptr),
                         kInvalid, "options->causal"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_1d(nullptr, 2, 2, 5, 0, 4, nullptr, table.data(), 1,
                                                   &negative_offset, nullptr),
                         kInvalid, "options->query_offset"));
  EXPECT_TRUE(fails_with(
      posenc_relative_logits_1d(nullptr, 1, 2, 5, 0, 4, q.data(), nullptr, 1, nullptr, nullptr),
      POSENC_ERROR_NULL_POINTER, "table"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_1d(nullptr, 1, 2, 5, -3, 4, q.data(), table.data(),
                                                   1, nullptr, nullptr),
                         kInvalid, "keys must be >= 0 (got -3)"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 0, 2, 3, offset_bytes(q.data(), 2), nullptr),
                         kInvalid, "in"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 0, -2, 3, nullptr, nullptr), kInvalid,
                         "heads must be >= 0 (got -2)"));
  EXPECT_TRUE(fails_with(posenc_rel_to_abs(nullptr, 0, 1, INT64_MAX, nullptr, nullptr),
                         POSENC_ERROR_OVERFLOW, "length"));
  EXPECT_TRUE(out.guards_intact());
  EXPECT_TRUE(out.payload_untouched());
  EXPECT_TRUE(q.payload_untouched() && table.payload_untouched());
}

// A clip and a query offset near INT64_MAX (each valid; their sum is not
// formed): every distance is below -clip, so every logit is q . table row 0
// (the table stored from -clip). Worked: q = 1, 2, 3, 4 and row 0 = 1, 1,
// 1, 1 give 10 for each key.
TEST(Relative1dClip, OffsetsNearTheEndOfInt64) {
  for (const auto& [offset, clip] :
       {std::pair{INT64_MAX - 3, int64_t(3)},
        std::pair{INT64_MAX - (int64_t(1) << 40) - 3, int64_t(1) << 40}}) {
    SCOPED_TRACE(testing::Message() << "offset " << offset << " clip " << clip);
    const std::vector<float> q = {1.0f, 2.0f, 3.0f, 4.0f};
    // out (2 floats, then 62 that must stay 7) below the table in one
    // buffer: the table's 2 clip + 1 rows, as posenc takes them, lie past
    // out wherever the buffer is. Only rows 0 and 1 exist: a 2-key call
    // reads at most two distances, here both row 0.
    std::vector<float> memory(64, 7.0f);
    memory.insert(memory.end(), {1.0f, 1.0f, 1.0f, 1.0f, 5.0f, 5.0f, 5.0f, 5.0f});
    const posenc_relative_options options{offset, clip, 0};
    ASSERT_EQ(posenc_relative_logits_1d(nullptr, 1, 1, 1, 2, 4, q.data(), memory.data() + 64, 1,
                                        &options, memory.data()),
              POSENC_OK)
        << posenc_last_error();
    EXPECT_EQ(memory[0], 10.0f);
    EXPECT_EQ(memory[1], 10.0f);
    EXPECT_TRUE(std::all_of(memory.begin() + 2, memory.begin() + 64,
                            [](float v) { return v == 7.0f; }));
  }
}

TEST(RelativeEmptyCalls, Logits2d) {
  constexpr auto kInvalid = POSENC_ERROR_INVALID_ARGUMENT;
  GuardedFloats q(256, 0.5f), rows(128, 0.25f), columns(128, 0.75f), out(512);
  float* o = out.data();
  for (const auto& [batch, heads] : {std::pair<int64_t, int64_t>{0, 2}, {2, 0}, {0, 0}}) {
    for (bool null : {true, false}) {
      // Tables shared by the heads have elements; per head with no heads, none.
      for (int64_t table_heads : {int64_t(1), heads}) {
        const bool empty_tables = null && table_heads == 0;
        const float* r = empty_tables ? nullptr : rows.data();
        const float* c = empty_tables ? nullptr : columns.data();
        const float* qp = null ? nullptr : q.data();
        float* h = null ? nullptr : o;
        float* w = null ? nullptr : o + 256;
        EXPECT_EQ(posenc_relative_logits_2d_decomposed(nullptr, batch, heads, 2, 3, 4, qp, r, c,
                                                       table_heads, h, w),
                  POSENC_OK)
            << posenc_last_error();
        EXPECT_EQ(
            posenc_relative_logits_2d(nullptr, batch, heads, 2, 3, 4, qp, r, c, table_heads, h),
            POSENC_OK)
            << posenc_last_error();
        posenc_relative_2d_desc desc;
        posenc_relative_2d_desc_init(&desc, batch, heads, 2, 3, 4);
        desc.table_heads = table_heads;
        desc.kv_map_height = 4;
        desc.kv_map_width = 5;
        desc.relative_order = POSENC_RELATIVE_QUERY_MINUS_KEY;
        EXPECT_EQ(posenc_relative_logits_2d_maps(nullptr, &desc, qp, r, c, h, w), POSENC_OK)
            << posenc_last_error();
      }
    }
  }
  auto decomposed = [&](int64_t batch, int64_t height, const float* r, float* h) {
    return posenc_relative_logits_2d_decomposed(nullptr, batch, 2, height, 3, 4, nullptr, r,
                                                columns.data(), 1, h, nullptr);
  };
  EXPECT_TRUE(
      fails_with(decomposed(0, 2, nullptr, nullptr), POSENC_ERROR_NULL_POINTER, "row_table"));
  EXPECT_TRUE(fails_with(decomposed(0, 2, rows.data(), offset_bytes(o, 2)), kInvalid, "rel_h"));
  EXPECT_TRUE(fails_with(decomposed(0, 0, rows.data(), nullptr), kInvalid, "height must be >= 1"));
  EXPECT_TRUE(
      fails_with(decomposed(-1, 2, rows.data(), nullptr), kInvalid, "batch must be >= 0 (got -1)"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d(nullptr, 0, 2, 2, 3, 0, nullptr, rows.data(),
                                                   columns.data(), 1, nullptr),
                         kInvalid, "dim must be >= 1"));
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d(nullptr, 0, 2, 2, 3, 4, nullptr, rows.data(),
                                                   columns.data(), 3, nullptr),
                         kInvalid, "table_heads"));
  posenc_relative_2d_desc desc;
  posenc_relative_2d_desc_init(&desc, 0, 2, 2, 3, 4);
  store_enum(desc.relative_order, 5);
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &desc, nullptr, rows.data(),
                                                        columns.data(), nullptr, nullptr),
                         kInvalid, "desc->relative_order"));
  posenc_relative_2d_desc_init(&desc, 0, 2, 2, 3, 4);
  desc.kv_map_height = 4;
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &desc, nullptr, rows.data(),
                                                        columns.data(), nullptr, nullptr),
                         kInvalid, "desc->kv_map_width"));
  posenc_relative_2d_desc_init(&desc, 2, -1, 2, 3, 4);
  EXPECT_TRUE(fails_with(posenc_relative_logits_2d_maps(nullptr, &desc, nullptr, rows.data(),
                                                        columns.data(), nullptr, nullptr),
                         kInvalid, "desc->heads must be >= 0 (got -1)"));
  EXPECT_TRUE(out.guards_intact());
  EXPECT_TRUE(out.payload_untouched());
}

}  // namespace
}  // namespace posenc::test
