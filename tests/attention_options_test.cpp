// The options of posenc_attention together, as serving code calls it: a
// padded batch whose q, k and v are views of one packed qkv tensor with
// grouped kv heads, per-sequence kv/q lengths and query offsets, an additive
// mask shared by a period of the batch, causal, each bias kind; against the
// double reference on every ISA path, fp32 and bf16, and the same bits at 1,
// 2 and 3 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "compare.hpp"
#include "isa_test.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

constexpr int64_t kBatch = 4, kHeads = 6, kKvHeads = 2, kTokens = 37, kDim = 16;
const int64_t kKvLengths[kBatch] = {37, 20, 1, 0};
const int64_t kQLengths[kBatch] = {37, 19, 1, 5};
const int64_t kOffsets[kBatch] = {0, 3, -2, 9};

// A mask of 2 entries in the batch's period (item b reads b % 2), per head,
// one row per query; about one entry in eight -inf.
std::vector<float> mask_values() {
  std::vector<float> mask = random_floats(size_t(2 * kHeads * kTokens * kTokens), 91);
  for (float& m : mask) m = m < -0.75f ? -std::numeric_limits<float>::infinity() : 2.0f * m;
  return mask;
}

posenc_attention_desc all_options(posenc_attention_bias bias, posenc_dtype dtype) {
  posenc_attention_desc d = attention_desc(kBatch, kHeads, kTokens, kTokens, kDim);
  d.kv_heads = kKvHeads;
  d = packed_qkv_desc(d, POSENC_LAYOUT_BHTD);  // out dense BHTD, as the reference gives it
  d.dtype = d.out_dtype = dtype;
  d.index_type = POSENC_INDEX_INT64;
  d.causal = 1;
  d.mask_batch = 2;
  d.mask_heads = kHeads;
  d.mask_q_len = kTokens;
  d.bias = bias;
  d.tables_per_head = 1;
  if (bias == POSENC_BIAS_RELATIVE_1D) {
    d.max_distance = 8;
    d.relative_values = 1;
  }
  if (bias == POSENC_BIAS_RELATIVE_2D) {
    d.causal = 0;  // a map attends both ways
    d.map_height = 1;
    d.map_width = kTokens;
  }
  return d;
}

// Table rows of the desc's bias (0 without a table).
int64_t table_rows(const posenc_attention_desc& d) {
  switch (d.bias) {
    case POSENC_BIAS_ABSOLUTE: return d.kv_len;
    case POSENC_BIAS_RELATIVE_1D: return 2 * d.max_distance + 1;
    default: return 0;
  }
}

class AllOptionsCall {
 public:
  explicit AllOptionsCall(const posenc_attention_desc& d) : d_(d) {
    const PackedQkv packed = packed_qkv(kTokens, kHeads, kKvHeads, kDim);
    k_offset_ = packed.k_offset;
    v_offset_ = packed.v_offset;
    qkv_ = values(size_t(kBatch * packed.strides.batch), 1);
    table_ = values(size_t(kHeads * table_rows(d) * kDim), 2);
    table_h_ = values(size_t(kHeads * 1 * kDim), 3);
    table_w_ = values(size_t(kHeads * (2 * kTokens - 1) * kDim), 4);
    value_table_ = d.relative_values ? values(size_t(kHeads * table_rows(d) * kDim), 5)
                                     : std::vector<float>{};
    mask_ = mask_values();
  }

  std::vector<double> reference() const {
    reference::AttentionInputs in{qkv_.data(),          qkv_.data() + k_offset_,
                                  qkv_.data() + v_offset_, or_null(table_),
                                  or_null(table_h_),    or_null(table_w_),
                                  or_null(value_table_), mask_.data()};
    in.kv_lengths = kKvLengths;
    in.q_lengths = kQLengths;
    in.query_offsets = kOffsets;
    return reference::attention(d_, in);
  }

  // The output (dense BHTD) as floats; empty where bf16 has no GEMM.
  std::vector<float> run(posenc_context* context) const {
    const size_t count = size_t(kBatch * kHeads * kTokens * kDim);
    GuardedFloats out(count);
    const bool bf16 = d_.dtype == POSENC_BF16;
    const std::vector<uint16_t> qkv = to_bf16(qkv_), table = to_bf16(table_),
                                table_h = to_bf16(table_h_), table_w = to_bf16(table_w_),
                                value_table = to_bf16(value_table_);
    const size_t es = bf16 ? 2 : 4;
    const auto pass = [&](const std::vector<float>& f, const std::vector<uint16_t>& b) {
      return f.empty() ? nullptr : bf16 ? static_cast<const void*>(b.data()) : f.data();
    };
    posenc_attention_tensors t{};
    t.q = pass(qkv_, qkv);
    t.k = static_cast<const char*>(t.q) + size_t(k_offset_) * es;
    t.v = static_cast<const char*>(t.q) + size_t(v_offset_) * es;
    if (d_.bias == POSENC_BIAS_RELATIVE_2D) {
      t.table_h = pass(table_h_, table_h);
      t.table_w = pass(table_w_, table_w);
    } else if (d_.bias != POSENC_BIAS_NONE) {
      t.table = pass(table_, table);
    }
    t.value_table = pass(value_table_, value_table);
    t.mask = mask_.data();
    t.kv_lengths = kKvLengths;
    t.q_lengths = kQLengths;
    t.query_offsets = kOffsets;
    t.out = out.data();
    const posenc_status status = posenc_attention(context, &d_, &t, nullptr, 0);
    if (status == POSENC_ERROR_UNSUPPORTED && bf16) return {};
    EXPECT_EQ(status, POSENC_OK) << posenc_last_error();
    EXPECT_TRUE(out.guards_intact());
    return as_floats(out, count, d_.out_dtype);
  }

 private:
  std::vector<float> values(size_t count, uint32_t seed) const {
    std::vector<float> x = random_floats(count, seed * 131u + uint32_t(count));
    return d_.dtype == POSENC_BF16 ? from_bf16(to_bf16(x)) : x;
  }
  static const float* or_null(const std::vector<float>& x) {
    return x.empty() ? nullptr : x.data();
  }

  posenc_attention_desc d_;
  int64_t k_offset_, v_offset_;
  std::vector<float> qkv_, table_, table_h_, table_w_, value_table_, mask_;
};

class AttentionAllOptions : public IsaTest {};

TEST_P(AttentionAllOptions, MatchTheReferenceAndAnyThreadCount) {
  for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
    for (posenc_attention_bias bias : {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE,
                                       POSENC_BIAS_RELATIVE_1D, POSENC_BIAS_RELATIVE_2D}) {
      const posenc_attention_desc d = all_options(bias, dtype);
      SCOPED_TRACE("bias " + std::to_string(int(bias)) + (dtype == POSENC_BF16 ? " bf16" : ""));
      const AllOptionsCall call(d);
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        posenc_context* raw = nullptr;
        ASSERT_EQ(posenc_context_create(GetParam(), threads, &raw), POSENC_OK);
        const std::vector<float> got = call.run(raw);
        posenc_context_destroy(raw);
        if (got.empty()) break;  // bf16 without a bf16 GEMM
        if (first.empty()) {
          first = got;
          const bool bf16 = dtype == POSENC_BF16;
          EXPECT_TRUE(all_close(got.data(), call.reference(), bf16 ? 2e-2 : 1e-5,
                                bf16 ? 2e-2 : 1e-4));
        } else {
          EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
              << threads << " threads";
        }
      }
    }
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionAllOptions);

}  // namespace
}  // namespace posenc::test
