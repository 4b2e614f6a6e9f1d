// bf16 attention widened to fp32 where oneDNN's bf16 GEMM is not native (no
// AVX512-BF16 or AMX, or an ISA cap below them, as in the suite's
// AVX2-capped run on any x86 CPU): the GEMMs multiply the bf16 values
// exactly in fp32 and the probabilities stay fp32, so a bf16 call must give
// the double reference on the same values within fp32's tolerance, which
// bf16 GEMMs (probabilities rounded to bf16) miss by far. On every ISA path
// (the widening kernel is the path's), for each place an operand is
// widened: q's copy, a key block's keys and values (packed per kv head, or
// read per block), the table rows of each bias's GEMMs, the relative
// values' table; values past a sequence's length that hold NaN; decode
// steps.
#include <gtest/gtest.h>

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
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

// Whether the bf16 attention of d packs each kv head's widened keys and
// values (else a task widens them per key block).
bool packs_key_values(posenc_attention_desc d) {
  d.dtype = POSENC_BF16;
  return ops::plan_attention(ops::make_attention_problem(d), 1).layout.packed.bytes() > 0;
}

// Whether d's tasks run the decode kernels and widen q for the bias alone.
bool widens_bias_q(posenc_attention_desc d) {
  d.dtype = POSENC_BF16;
  const ops::AttentionProblem p = ops::make_attention_problem(d);
  return ops::plan_attention(p, 1).blocking.widens_bias_q(p);
}

class AttentionWidened : public IsaTest {
 protected:
  void SetUp() override {
    IsaTest::SetUp();
    if (onednn_bf16_gemm_is_native()) {
      GTEST_SKIP() << "oneDNN multiplies bf16 natively here: bf16 is not widened (the "
                      "AVX2-capped run widens it)";
    }
  }

  // d in bf16 (out fp32) on random inputs, with v past each kv_lengths[b]
  // NaN, against the reference at fp32's tolerance.
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
    EXPECT_TRUE(all_close(got.data(), reference::attention(d, call.reference()), 1e-5, 1e-4));
  }
};

TEST_P(AttentionWidened, PlainAndCausal) {
  // Two query blocks per head: the keys and values packed per kv head.
  posenc_attention_desc d = attention_desc(2, 3, 300, 300, 64);
  EXPECT_TRUE(packs_key_values(d));
  expect_fp32_accuracy(d, "packed, BHTD");
  // One query block, q's rows strided (BTHD): keys and values widened per block.
  d = attention_desc(4, 2, 49, 49, 32);
  d.layout = POSENC_LAYOUT_BTHD;
  EXPECT_FALSE(packs_key_values(d));
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
  EXPECT_FALSE(packs_key_values(d));
  expect_fp32_accuracy(d, "per block", Sequences{{97, 33, 1}, {}, {}});
  // Two query heads per kv head, or two query blocks per head: packed.
  d.kv_heads = 1;
  EXPECT_TRUE(packs_key_values(d));
  expect_fp32_accuracy(d, "packed, grouped heads", Sequences{{97, 33, 1}, {}, {}});
  d = attention_desc(2, 2, 300, 300, 16);
  EXPECT_TRUE(packs_key_values(d));
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
      EXPECT_EQ(widens_bias_q(d), q_len == 1);
    }
    expect_fp32_accuracy(d, "relative 1D, " + std::to_string(q_len) + " rows");
  }
  posenc_attention_desc d = attention_desc(1, 8, 1, 4500, 16);
  d.kv_heads = 2;
  expect_fp32_accuracy(d, "split keys", Sequences{{4321}, {}, {}});
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionWidened);

}  // namespace
}  // namespace posenc::test
