// bf16 attention widened to fp32 where its GEMMs would not outpace fp32 ones
// (bf16_gemms_outpace_fp32: no AVX512-BF16 or AMX, Intel's AVX512-BF16
// without AMX, or an ISA cap below them, as in the suite's AVX2-capped run
// on any x86 CPU): the GEMMs multiply the bf16 values
// exactly in fp32 and the probabilities stay fp32, so a bf16 call must give
// the double reference on the same values within fp32's tolerance, which
// bf16 GEMMs (probabilities rounded to bf16) miss by far. On every ISA path
// (the widening kernel is the path's), for each place an operand is
// widened: q's copy, a key block's keys and values (packed per kv head, or
// read per block), the table rows of each bias's GEMMs, the relative
// values' table; values past a sequence's length that hold NaN; decode
// steps. And the bottleneck block, which widens its inputs and runs the fp32
// block: bit for bit the fp32 block on the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attention_tensors.hpp"
#include "compare.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

// Whether the bf16 attention of d on the path `isa` packs each kv head's
// widened keys and values (else a task widens them per key block).
bool packs_key_values(posenc_attention_desc d, posenc_isa isa) {
  d.dtype = POSENC_BF16;
  return ops::plan_attention(ops::make_attention_problem(d), 1, isa).layout.packed.bytes() > 0;
}

// Whether d's tasks on the path `isa` run the decode kernels and widen q for
// the bias alone.
bool widens_bias_q(posenc_attention_desc d, posenc_isa isa) {
  d.dtype = POSENC_BF16;
  const ops::AttentionProblem p = ops::make_attention_problem(d);
  return ops::plan_attention(p, 1, isa).blocking.widens_bias_q(p);
}

class AttentionWidened : public IsaTest {
 protected:
  void SetUp() override {
    IsaTest::SetUp();
    if (bf16_gemms_outpace_fp32()) {
      GTEST_SKIP() << "the attention's GEMMs run in bf16 here: bf16 is not widened (the "
                      "AVX2-capped run widens it)";
    }
  }

  // Whether d's bf16 tasks run the AVX512-BF16 decode kernels (the AVX-512
  // path of such a CPU), which round the probabilities to bf16 whether or
  // not the GEMMs widen (posenc/attention.h): bf16's tolerance then.
  bool rounds_probabilities(posenc_attention_desc d) const {
    if (GetParam() != POSENC_ISA_AVX512 || !cpu_has(kCpuAvx512Bf16)) return false;
    d.dtype = POSENC_BF16;
    return ops::plan_attention(ops::make_attention_problem(d), 1, GetParam())
        .blocking.decode_products;
  }

  // d in bf16 (out fp32) on random inputs, with v past each kv_lengths[b]
  // NaN, against the reference at fp32's tolerance (bf16's where the decode
  // kernels round the probabilities).
  void expect_fp32_accuracy(posenc_attention_desc d, const std::string& what,
                            const Sequences& s = {}) {
    SCOPED_TRACE(what);
    d.dtype = POSENC_BF16;
    d.out_dtype = POSENC_F32;
    const int64_t kv_heads = d.kv_heads == 0 ? d.heads : d.kv_heads;
    const int64_t value_dim = d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
    const int64_t table_heads = d.tables_per_head ? d.heads : 1;
    AttentionTensors call(d, s);
    call.fill(Tensor::q, size_t(d.batch * d.heads * d.q_len * d.head_dim), 1);
    call.fill(Tensor::k, size_t(d.batch * kv_heads * d.kv_len * d.head_dim), 2);
    std::vector<float> v = random_floats(size_t(d.batch * kv_heads * d.kv_len * value_dim), 3);
    for (size_t b = 0; b < s.kv_lengths.size(); ++b) {
      for (int64_t h = 0; h < kv_heads; ++h) {
        for (int64_t t = s.kv_lengths[b]; t < d.kv_len; ++t) {
          for (int64_t c = 0; c < value_dim; ++c) {
            v[size_t(((int64_t(b) * kv_heads + h) * d.kv_len + t) * value_dim + c)] =
                std::numeric_limits<float>::quiet_NaN();
          }
        }
      }
    }
    call.set(Tensor::v, v);
    const int64_t rows = relative_rows(d, s.query_offsets);
    if (d.bias == POSENC_BIAS_ABSOLUTE) {
      call.fill(Tensor::table, size_t(table_heads * d.kv_len * d.head_dim), 4);
    }
    if (d.bias == POSENC_BIAS_RELATIVE_1D) {
      call.fill(Tensor::table, size_t(table_heads * rows * d.head_dim), 4);
    }
    if (d.bias == POSENC_BIAS_RELATIVE_2D) {
      call.fill(Tensor::table_h, size_t(table_heads * (2 * d.map_height - 1) * d.head_dim), 5);
      call.fill(Tensor::table_w, size_t(table_heads * (2 * d.map_width - 1) * d.head_dim), 6);
    }
    if (d.relative_values) {
      call.fill(Tensor::value_table, size_t(table_heads * rows * value_dim), 7);
    }
    const std::vector<float> got = run(context(), call, true);
    const bool bf16 = rounds_probabilities(d);
    EXPECT_TRUE(all_close(got.data(), reference::attention(d, call.reference()),
                          bf16 ? kBf16Tol : 1e-5, bf16 ? kBf16Tol : 1e-4));
  }
};

TEST_P(AttentionWidened, PlainAndCausal) {
  // Two query blocks per head: the keys and values packed per kv head.
  posenc_attention_desc d = attention_desc(2, 3, 300, 300, 64);
  EXPECT_TRUE(packs_key_values(d, GetParam()));
  expect_fp32_accuracy(d, "packed, BHTD");
  // One query block, q's rows strided (BTHD): keys and values widened per
  // block. (Heads of 96: not a small problem, which runs no GEMMs.)
  d = attention_desc(4, 2, 49, 49, 96);
  d.layout = POSENC_LAYOUT_BTHD;
  EXPECT_FALSE(packs_key_values(d, GetParam()));
  expect_fp32_accuracy(d, "per block, BTHD");
  d = attention_desc(1, 4, 37, 100, 16);
  d.causal = 1;
  d.query_offset = 63;
  expect_fp32_accuracy(d, "causal from an offset");
  // Longer than one key block (the online softmax), values wider than keys.
  d = attention_desc(1, 2, 70, 2500, 8);
  d.value_head_dim = 24;
  expect_fp32_accuracy(d, "two key blocks, value_head_dim 24");
}

TEST_P(AttentionWidened, ValuesPastTheLengthAreNeverRead) {
  // One query block per kv head: widened per block.
  posenc_attention_desc d = attention_desc(3, 2, 20, 97, 16);
  EXPECT_FALSE(packs_key_values(d, GetParam()));
  expect_fp32_accuracy(d, "per block", Sequences{{97, 33, 1}, {}, {}});
  // Two query heads per kv head, or two query blocks per head: packed.
  d.kv_heads = 1;
  EXPECT_TRUE(packs_key_values(d, GetParam()));
  expect_fp32_accuracy(d, "packed, grouped heads", Sequences{{97, 33, 1}, {}, {}});
  d = attention_desc(2, 2, 300, 300, 16);
  EXPECT_TRUE(packs_key_values(d, GetParam()));
  expect_fp32_accuracy(d, "packed", Sequences{{300, 111}, {}, {}});
}

TEST_P(AttentionWidened, BiasTables) {
  posenc_attention_desc d = attention_desc(2, 2, 130, 130, 32);
  d.bias = POSENC_BIAS_ABSOLUTE;
  d.tables_per_head = 1;
  expect_fp32_accuracy(d, "absolute");
  d = attention_desc(1, 3, 70, 70, 16);
  d.bias = POSENC_BIAS_RELATIVE_1D;
  d.max_distance = 5;
  d.relative_values = 1;
  d.causal = 1;
  expect_fp32_accuracy(d, "relative 1D, clipped, relative values");
  d.max_distance = 0;
  d.tables_per_head = 1;
  expect_fp32_accuracy(d, "relative 1D, unclipped, per-head tables");
  d = attention_desc(2, 3, 63, 63, 16);
  d.bias = POSENC_BIAS_RELATIVE_2D;
  d.map_height = 7;
  d.map_width = 9;
  expect_fp32_accuracy(d, "relative 2D, 7x9");
}

// Decode steps: the decode kernels (at most 4 rows a task) read bf16 as
// stored, a bias's GEMMs q widened; GEMMs widen everything (5 queries);
// split keys, grouped heads.
TEST_P(AttentionWidened, DecodeSteps) {
  for (int64_t q_len : {1, 3, 5}) {
    posenc_attention_desc d = attention_desc(2, 4, q_len, 300, 64);
    d.kv_heads = 2;
    d.causal = 1;
    d.query_offset = 300 - q_len;
    expect_fp32_accuracy(d, "plain, " + std::to_string(q_len) + " rows");
    d.bias = POSENC_BIAS_RELATIVE_1D;
    d.max_distance = 16;
    d.relative_values = 1;
    if (q_len != 3) {  // (3 rows: either, as heads are stacked or not)
      EXPECT_EQ(widens_bias_q(d, GetParam()), q_len == 1);
    }
    expect_fp32_accuracy(d, "relative 1D, " + std::to_string(q_len) + " rows");
  }
  posenc_attention_desc d = attention_desc(1, 8, 1, 4500, 16);
  d.kv_heads = 2;
  expect_fp32_accuracy(d, "split keys", Sequences{{4321}, {}, {}});
}

// A bottleneck block's inputs: random values exact in bf16, as floats.
struct BottleneckInputs {
  std::vector<float> fmap, w_qkv, qkv_bias, rel_h, rel_w;

  explicit BottleneckInputs(const posenc_bottleneck_desc& d, bool with_bias) {
    const int64_t dv = d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
    const int64_t qkv = d.heads * (2 * d.head_dim + dv);
    const int64_t table_heads = d.tables_per_head ? d.heads : 1;
    const auto bf16_values = [](size_t count, uint32_t seed, float scale) {
      std::vector<float> x = random_floats(count, seed);
      for (float& v : x) v *= scale;
      return from_bf16(to_bf16(x));
    };
    fmap = bf16_values(size_t(d.batch * d.channels * d.height * d.width), 21, 1.0f);
    // Weights of a model's scale, fan_in^-1/2.
    w_qkv = bf16_values(size_t(qkv * d.channels), 22, 1.0f / std::sqrt(float(d.channels)));
    qkv_bias = bf16_values(with_bias ? size_t(qkv) : 0, 23, 1.0f);
    rel_h = bf16_values(size_t(table_heads * (2 * d.height - 1) * d.head_dim), 24, 1.0f);
    rel_w = bf16_values(size_t(table_heads * (2 * d.width - 1) * d.head_dim), 25, 1.0f);
  }
};

// The block of d (its dtype's inputs: the floats, or their bf16 bits) into
// out, with a workspace of exactly the size the query reports, whose bytes
// past that size must stay as they were. Without a qkv bias through
// posenc_bottleneck_mhsa.
::testing::AssertionResult run_bottleneck(const posenc_bottleneck_desc& d,
                                          const BottleneckInputs& in, posenc_context* context,
                                          GuardedFloats& out) {
  size_t bytes = 0;
  if (posenc_bottleneck_workspace_size(context, &d, &bytes) != POSENC_OK) {
    return ::testing::AssertionFailure() << posenc_last_error();
  }
  constexpr size_t kGuard = 256;
  constexpr uint8_t kFill = 0xA5;
  std::vector<uint8_t> workspace(bytes + kGuard, kFill);
  const bool bf16 = d.dtype == POSENC_BF16;
  const std::vector<uint16_t> bits[] = {to_bf16(in.fmap), to_bf16(in.w_qkv), to_bf16(in.qkv_bias),
                                        to_bf16(in.rel_h), to_bf16(in.rel_w)};
  const std::vector<float>* floats[] = {&in.fmap, &in.w_qkv, &in.qkv_bias, &in.rel_h, &in.rel_w};
  const auto pass = [&](int i) -> const void* {
    if (floats[i]->empty()) return nullptr;
    return bf16 ? static_cast<const void*>(bits[i].data()) : floats[i]->data();
  };
  const posenc_bottleneck_tensors t{pass(0), pass(1), pass(2), pass(3), pass(4), out.data()};
  const posenc_status status = t.qkv_bias == nullptr
                                   ? posenc_bottleneck_mhsa(context, &d, t.fmap, t.w_qkv, t.rel_h,
                                                            t.rel_w, t.out, workspace.data(), bytes)
                                   : posenc_bottleneck(context, &d, &t, workspace.data(), bytes);
  if (status != POSENC_OK) return ::testing::AssertionFailure() << posenc_last_error();
  if (!out.guards_intact()) return ::testing::AssertionFailure() << "wrote past out";
  for (size_t i = bytes; i < workspace.size(); ++i) {
    if (workspace[i] != kFill) {
      return ::testing::AssertionFailure() << "wrote past the " << bytes << " workspace bytes";
    }
  }
  return ::testing::AssertionSuccess();
}

// The bf16 block (bf16 or fp32 out) against the fp32 block called on the
// same values, which it must equal bit for bit, and the double reference
// within fp32's tolerance (and, for a bf16 out, one rounding to bf16).
void expect_bottleneck_is_the_f32_block(posenc_context* context, posenc_bottleneck_desc d,
                                        bool qkv_bias) {
  SCOPED_TRACE("B" + std::to_string(d.batch) + " " + std::to_string(d.height) + "x" +
               std::to_string(d.width) + " head_dim " + std::to_string(d.head_dim) +
               " value_head_dim " + std::to_string(d.value_head_dim) + " stride " +
               std::to_string(d.stride) + (qkv_bias ? " qkv bias" : "") +
               (d.out_dtype == POSENC_BF16 ? " bf16 out" : ""));
  const BottleneckInputs in(d, qkv_bias);
  const int64_t dv = d.value_head_dim == 0 ? d.head_dim : d.value_head_dim;
  const size_t count =
      size_t(d.batch * d.heads * dv * (d.height / d.stride) * (d.width / d.stride));
  posenc_bottleneck_desc f32 = d;
  f32.dtype = POSENC_F32;
  d.dtype = POSENC_BF16;
  GuardedFloats got(count), want(count);
  ASSERT_TRUE(run_bottleneck(d, in, context, got));
  ASSERT_TRUE(run_bottleneck(f32, in, context, want));
  const size_t out_bytes = count * (d.out_dtype == POSENC_BF16 ? 2 : 4);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), out_bytes), 0) << "not the fp32 block's bits";
  // The widened inputs lie in the workspace, beside the fp32 block's.
  size_t bf16_bytes = 0, f32_bytes = 0;
  ASSERT_EQ(posenc_bottleneck_workspace_size(context, &d, &bf16_bytes), POSENC_OK);
  ASSERT_EQ(posenc_bottleneck_workspace_size(context, &f32, &f32_bytes), POSENC_OK);
  EXPECT_GT(bf16_bytes, f32_bytes);
  const std::vector<double> reference = reference::bottleneck_mhsa(
      d, in.fmap.data(), in.w_qkv.data(), qkv_bias ? in.qkv_bias.data() : nullptr, in.rel_h.data(),
      in.rel_w.data());
  const double rtol = d.out_dtype == POSENC_BF16 ? 1e-4 + 0x1p-8 : 1e-4;
  EXPECT_TRUE(all_close(as_floats(got, count, d.out_dtype).data(), reference, 1e-5, rtol));
}

// The bf16 bottleneck block widens its inputs and runs the fp32 block on
// them: with and without a qkv bias, stride 1 and 2 (an odd map's last row
// and column dropped), v heads narrower and wider than q's and k's, fp32
// and bf16 out, batch 1 and 3, on odd and non-square maps.
TEST_P(AttentionWidened, BottleneckIsTheF32BlockOnTheSameValues) {
  struct Shape {
    int64_t batch, channels, height, width, heads, head_dim, value_head_dim;
    int tables_per_head;
  };
  const Shape shapes[] = {
      {1, 12, 7, 5, 2, 8, 0, 0}, {3, 16, 7, 5, 2, 8, 16, 1}, {3, 20, 6, 9, 3, 16, 4, 0}};
  for (const Shape& s : shapes) {
    for (int64_t stride : {1, 2}) {
      for (bool qkv_bias : {false, true}) {
        for (posenc_dtype out_dtype : {POSENC_F32, POSENC_BF16}) {
          posenc_bottleneck_desc d =
              bottleneck_desc(s.batch, s.channels, s.height, s.width, s.heads, s.head_dim);
          d.value_head_dim = s.value_head_dim;
          d.tables_per_head = s.tables_per_head;
          d.bias_uses_scaled_q = qkv_bias ? 0 : 1;
          d.stride = stride;
          d.out_dtype = out_dtype;
          expect_bottleneck_is_the_f32_block(context(), d, qkv_bias);
        }
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionWidened);

}  // namespace
}  // namespace posenc::test
