// Randomized differential test of posenc_attention on every ISA path: valid
// descs drawn at random, mixing the options that the other attention tests
// check one or a few at a time (grouped kv heads, value head sizes, the
// three layouts with spare and zero strides, causal with offsets and
// sliding windows, per-sequence lengths and offsets, masks, every bias
// kind, scales, bf16 in and out), with NaN in what posenc never reads (padding past the lengths,
// gaps between strided rows); each against the double reference loops, a
// subset also bit for bit at 1, 2 and 3 threads. Call n is drawn from the
// seed kSeed + n, which its failure message names with the desc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention_tensors.hpp"
#include "isa_test.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/position_bias.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "reference/attention.hpp"

namespace posenc::test {
namespace {

constexpr uint32_t kSeed = 20240611;
constexpr uint32_t kCalls = 400;
// Every kThreadsPeriod-th call is also run at 1, 2 and 3 threads.
constexpr uint32_t kThreadsPeriod = 5;
// The most multiply-adds a desc may give the reference loops (the test's
// time, under the sanitizers too).
constexpr int64_t kMaxReferenceWork = int64_t(1) << 24;

constexpr int64_t kHeadSizes[] = {1, 3, 8, 16, 17, 32, 64};
constexpr int64_t kSmallLengths[] = {1, 2, 3, 5, 7, 13, 17, 31, 37, 64, 97};

// Draws from std::mt19937, whose sequence the standard fixes (its
// distributions are not: the same seed gives the same descs everywhere).
class Draw {
 public:
  explicit Draw(uint32_t seed) : bits_(seed) {}

  int64_t in(int64_t low, int64_t high) {
    return low + int64_t(bits_() % uint64_t(high - low + 1));
  }
  bool one_in(int64_t n) { return in(1, n) == 1; }
  template <class T>
  T of(std::initializer_list<T> values) {
    return values.begin()[in(0, int64_t(values.size()) - 1)];
  }
  template <class T, size_t N>
  T of(const T (&values)[N]) {
    return values[in(0, int64_t(N) - 1)];
  }
  uint32_t seed() { return uint32_t(bits_()); }

 private:
  std::mt19937 bits_;
};

int64_t divisor_of(Draw& r, int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t k = 1; k <= n; ++k) {
    if (n % k == 0) divisors.push_back(k);
  }
  return divisors[size_t(r.in(0, int64_t(divisors.size()) - 1))];
}

// A length in [0, n], its ends and 1 more often than the rest.
int64_t length_up_to(Draw& r, int64_t n) {
  switch (r.in(0, 5)) {
    case 0:
      return n;
    case 1:
      return 0;
    case 2:
      return std::min<int64_t>(1, n);
    default:
      return r.in(0, n);
  }
}

// A query offset: 0, a decode step's after `cached` keys, any from before
// the first key to past the last, or where the distances straddle
// -max_distance or max_distance (the edge rows of RELATIVE_1D, TABLE_1D
// and T5's largest bucket; of all kinds, keys far from their queries).
int64_t query_offset_of(Draw& r, const posenc_attention_desc& d, int64_t cached) {
  switch (r.in(0, 4)) {
    case 0:
      return 0;
    case 1:
      return cached - d.q_len;
    case 2:
      return r.in(-d.q_len - 2, d.kv_len + 2);
    case 3:
      return d.max_distance + r.in(-d.q_len, d.kv_len);
    default:
      return -d.max_distance - r.in(-d.kv_len, d.q_len);
  }
}

// The lengths: a map's tokens for the 2D kinds; else a decode step against a
// cache (keys split into ranges, grouped heads stacked), queries against
// several key blocks (the online softmax), or small lengths.
void draw_lengths(Draw& r, posenc_attention_desc& d) {
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    d.map_height = r.in(1, 6);
    d.map_width = r.in(1, 6);
    d.relative_order = posenc_relative_order(r.in(0, 1));
    if (r.one_in(2)) {
      d.kv_map_height = r.in(1, 6);
      d.kv_map_width = r.in(1, 6);
    }
    d.q_len = d.map_height * d.map_width;
    d.kv_len = d.kv_map_height == 0 ? d.q_len : d.kv_map_height * d.kv_map_width;
  } else if (d.bias == POSENC_BIAS_TABLE_2D) {
    d.map_height = r.in(1, 7);
    d.map_width = r.in(1, 7);
    d.class_token = int(r.in(0, 1));
    d.q_len = d.kv_len = d.map_height * d.map_width + d.class_token;
  } else if (r.one_in(3)) {
    d.q_len = r.in(1, 16);
    d.kv_len = r.in(256, 3000);
  } else if (r.one_in(8)) {
    d.q_len = r.in(17, 40);
    d.kv_len = r.in(2049, 2600);
  } else {
    d.q_len = r.of(kSmallLengths);
    d.kv_len = r.of(kSmallLengths);
  }
}

// The fields of the bias kind (posenc/attention.h's and posenc/bias.h's
// ranges), relative values where they are available.
void draw_bias_fields(Draw& r, posenc_attention_desc& d) {
  const bool reads_q = d.bias <= POSENC_BIAS_RELATIVE_2D || d.bias == POSENC_BIAS_DISENTANGLED;
  if (reads_q) {
    d.tables_per_head = int(r.in(0, 1));
    d.bias_uses_scaled_q = int(r.in(0, 1));
  }
  if (d.bias <= POSENC_BIAS_RELATIVE_1D) d.relative_values = int(r.one_in(3));
  if (d.bias == POSENC_BIAS_RELATIVE_1D || d.relative_values) {
    d.max_distance = r.one_in(2) ? 0 : r.in(1, 40);  // unclipped, or clipped at K
  }
  if (d.bias == POSENC_BIAS_TABLE_1D) d.max_distance = r.one_in(3) ? r.in(0, 3000) : r.in(0, 40);
  if (d.bias == POSENC_BIAS_T5 || d.bias == POSENC_BIAS_ALIBI) d.bidirectional = int(r.in(0, 1));
  if (d.bias == POSENC_BIAS_DISENTANGLED) {  // a span, or log buckets (least M: 3, 7, 20, 345)
    d.num_buckets = r.of<int64_t>({0, 2, 7, 16, 256});
    const int64_t least = d.num_buckets == 0   ? 1
                          : d.num_buckets == 2 ? 3
                          : d.num_buckets == 7 ? 7
                          : d.num_buckets == 16 ? 20
                                                : 345;
    d.max_distance = least + (r.one_in(3) ? 0 : r.in(1, 600));
  }
  if (d.bias == POSENC_BIAS_T5) {
    d.num_buckets =
        d.bidirectional ? r.of<int64_t>({4, 8, 32, 320}) : r.of<int64_t>({2, 8, 32, 320});
    const int64_t max_exact = (d.bidirectional ? d.num_buckets / 2 : d.num_buckets) / 2;
    d.max_distance = max_exact + (r.one_in(4) ? r.in(1, 3000) : r.in(1, 150));
  }
}

// Strides of a tensor under STRIDED: dense BHTD or BTHD, or a cache's with
// spare tokens per head whose rows are padded by spare elements.
posenc_token_strides strides_of(Draw& r, int64_t heads, int64_t tokens, int64_t row) {
  if (r.one_in(3)) {
    return dense_strides(r.of({POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD}), heads, tokens, row);
  }
  const int64_t capacity = tokens + r.in(0, 9);
  return kv_cache_strides(heads, capacity, row + r.in(0, 3));
}

void draw_layout(Draw& r, posenc_attention_desc& d) {
  d.layout = posenc_attention_layout(r.in(0, 2));
  if (d.layout != POSENC_LAYOUT_STRIDED) return;
  const int64_t dv = reference::value_head_dim_of(d);
  d.q_strides = strides_of(r, d.heads, d.q_len, d.head_dim);
  d.k_strides = strides_of(r, reference::kv_heads_of(d), d.kv_len, d.head_dim);
  d.v_strides = strides_of(r, reference::kv_heads_of(d), d.kv_len, dv);
  d.out_strides = strides_of(r, d.heads, d.q_len, dv);
  // Zero strides: one k and v for the whole batch, or for all heads.
  if (r.one_in(5)) d.k_strides.batch = d.v_strides.batch = 0;
  if (r.one_in(5)) d.k_strides.head = d.v_strides.head = 0;
}

void draw_mask_shape(Draw& r, posenc_attention_desc& d) {
  d.mask_batch = divisor_of(r, d.batch);
  d.mask_heads = r.of<int64_t>({1, d.heads});
  d.mask_q_len = r.of<int64_t>({1, d.q_len});
  d.mask_dtype = r.of({POSENC_F32, POSENC_BF16});
}

// Per-sequence tensors, each in about a third of the calls, and the desc's
// query offset where they have none.
Sequences draw_sequences(Draw& r, posenc_attention_desc& d) {
  Sequences s;
  d.index_type = r.of({POSENC_INDEX_INT32, POSENC_INDEX_INT64});
  const bool any_offset = d.bias != POSENC_BIAS_TABLE_2D;  // a window has none
  const bool kv_lengths = r.one_in(3), q_lengths = r.one_in(3);
  const bool query_offsets = any_offset && r.one_in(3);
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t cached = kv_lengths ? length_up_to(r, d.kv_len) : d.kv_len;
    if (kv_lengths) s.kv_lengths.push_back(cached);
    if (q_lengths) s.q_lengths.push_back(length_up_to(r, d.q_len));
    if (query_offsets) s.query_offsets.push_back(query_offset_of(r, d, cached));
  }
  if (any_offset && !query_offsets) d.query_offset = query_offset_of(r, d, d.kv_len);
  return s;
}

// The reference loops' multiply-adds, which the desc's time follows.
int64_t reference_work(const posenc_attention_desc& d) {
  return d.batch * d.heads * d.q_len * d.kv_len * 2 *
         (d.head_dim + reference::value_head_dim_of(d));
}

posenc_attention_desc draw_desc(Draw& r) {
  // (One draw a statement: the order of a call's arguments is unspecified.)
  const int64_t batch = r.in(1, 3);
  const int64_t heads = r.of<int64_t>({1, 2, 3, 4, 6, 8});
  posenc_attention_desc d = attention_desc(batch, heads, 0, 0, r.of(kHeadSizes));
  d.bias = posenc_attention_bias(r.in(POSENC_BIAS_NONE, POSENC_BIAS_DISENTANGLED));
  draw_lengths(r, d);
  draw_bias_fields(r, d);
  d.kv_heads = r.one_in(4) ? 0 : divisor_of(r, d.heads);
  if (r.one_in(3)) d.value_head_dim = r.of(kHeadSizes);
  d.dtype = r.of({POSENC_F32, POSENC_BF16});
  d.out_dtype = r.of({POSENC_F32, POSENC_BF16});
  // Scales the softmax applies, 0 and below, and one the GEMM applies (below 2^-24).
  if (r.one_in(4)) d.scale = r.of({0.3f, 1.5f, 0.0f, -0.5f, 0x1p-25f});
  d.causal = int(r.in(0, 1));
  if (r.one_in(3)) d.sliding_window = r.in(1, d.kv_len + 2);
  d.sinks = int(r.one_in(4));
  if (d.bias == POSENC_BIAS_RELATIVE_1D) d.relative_query_bias = int(r.one_in(3));
  if (ops::takes_bias_gate(d.bias)) d.bias_gate = int(r.one_in(3));
  const bool bias_of_q = d.bias == POSENC_BIAS_ABSOLUTE || d.bias == POSENC_BIAS_RELATIVE_1D ||
                         d.bias == POSENC_BIAS_RELATIVE_2D || d.bias == POSENC_BIAS_DISENTANGLED;
  if (!bias_of_q && r.one_in(4)) d.softcap = r.of({0.5f, 3.0f, 50.0f});
  draw_layout(r, d);
  if (r.one_in(3)) draw_mask_shape(r, d);
  return d;
}

// mask_values' entries (about one in ten -inf) with about one row in eight
// -inf throughout.
std::vector<float> mask_of(Draw& r, const posenc_attention_desc& d) {
  std::vector<float> mask =
      mask_values(size_t(d.mask_batch * d.mask_heads * d.mask_q_len * d.kv_len), r.seed());
  for (auto row = mask.begin(); row != mask.end(); row += d.kv_len) {
    if (r.one_in(8)) std::fill(row, row + d.kv_len, -std::numeric_limits<float>::infinity());
  }
  return mask;
}

// q, k, v (over their strided extents) and the tables the desc reads:
// those read with q in [-1, 1), the others in [-2, 2) (biases the size of
// the scores), ALiBi's given slopes in [0.01, 1) or none (the standard ones).
void fill_inputs(Draw& r, AttentionTensors& x) {
  const posenc_attention_desc& d = x.desc();
  const int64_t dv = reference::value_head_dim_of(d), kv_heads = reference::kv_heads_of(d);
  const auto fill = [&](Tensor t, int64_t count, float low = -1.0f, float high = 1.0f) {
    x.fill(t, size_t(count), r.seed(), low, high);
  };
  fill(Tensor::q, reference::extent_of(d, d.q_strides, d.heads, d.q_len));
  fill(Tensor::k, reference::extent_of(d, d.k_strides, kv_heads, d.kv_len));
  fill(Tensor::v, reference::extent_of(d, d.v_strides, kv_heads, d.kv_len, dv));
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  const int64_t rows_1d = relative_rows(d, x.sequences().query_offsets);
  switch (d.bias) {
    case POSENC_BIAS_ABSOLUTE:
      fill(Tensor::table, heads * d.kv_len * d.head_dim);
      break;
    case POSENC_BIAS_RELATIVE_1D:
      fill(Tensor::table, heads * rows_1d * d.head_dim);
      break;
    case POSENC_BIAS_RELATIVE_2D: {
      const int64_t kv_height = d.kv_map_height ? d.kv_map_height : d.map_height;
      const int64_t kv_width = d.kv_map_width ? d.kv_map_width : d.map_width;
      fill(Tensor::table_h, heads * (2 * std::max(d.map_height, kv_height) - 1) * d.head_dim);
      fill(Tensor::table_w, heads * (2 * std::max(d.map_width, kv_width) - 1) * d.head_dim);
      break;
    }
    case POSENC_BIAS_TABLE_2D:
      fill(Tensor::table,
           ((2 * d.map_height - 1) * (2 * d.map_width - 1) + 3 * d.class_token) * d.heads, -2.0f,
           2.0f);
      break;
    case POSENC_BIAS_TABLE_1D:
      fill(Tensor::table, d.heads * (2 * d.max_distance + 1), -2.0f, 2.0f);
      break;
    case POSENC_BIAS_T5:
      fill(Tensor::table, d.num_buckets * d.heads, -2.0f, 2.0f);
      break;
    case POSENC_BIAS_ALIBI:
      if (r.one_in(2)) fill(Tensor::table, d.heads, 0.01f, 1.0f);
      break;
    case POSENC_BIAS_DISENTANGLED: {
      const int64_t rows = 2 * (d.num_buckets > 0 ? d.num_buckets : d.max_distance);
      fill(Tensor::table, heads * rows * d.head_dim);
      fill(Tensor::key_table, heads * rows * d.head_dim);
      break;
    }
    default:
      break;
  }
  if (d.relative_values) fill(Tensor::value_table, heads * rows_1d * dv);
  if (d.mask_batch > 0) x.set(Tensor::mask, mask_of(r, d));
  if (d.sinks) fill(Tensor::sinks, d.heads, -3.0f, 5.0f);
  if (d.relative_query_bias) fill(Tensor::relative_query_bias, d.heads * d.head_dim);
  if (d.bias_gate) fill(Tensor::bias_gate, d.batch * d.heads * d.q_len, -1.0f, 3.0f);
}

// NaN in the elements of a tensor of `heads` heads and `tokens` tokens of
// `row` elements that posenc/attention.h says never reach the outputs:
// between a strided tensor's rows (spare capacity, padded rows) and past
// each sequence's `lengths` (kv_lengths of k and v, q_lengths of q; none:
// all tokens are read).
void poison_unread(AttentionTensors& x, Tensor t, const posenc_token_strides& strides,
                   int64_t heads, int64_t tokens, int64_t row,
                   const std::vector<int64_t>& lengths) {
  const posenc_attention_desc& d = x.desc();
  std::vector<float>& values = x.values(t);
  std::vector<bool> read(values.size());
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t length = lengths.empty() ? tokens : lengths[size_t(b)];
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < length; ++i) {
        const int64_t first = reference::index_of(d, strides, heads, tokens, b, h, i, 0, row);
        std::fill_n(read.begin() + first, row, true);
      }
    }
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!read[i]) values[i] = std::numeric_limits<float>::quiet_NaN();
  }
}

// The call of seed `seed`: a valid desc within kMaxReferenceWork, its
// per-sequence values and inputs.
AttentionTensors random_call(uint32_t seed) {
  Draw r(seed);
  posenc_attention_desc d;
  do {
    d = draw_desc(r);
  } while (reference_work(d) > kMaxReferenceWork);
  Sequences s = draw_sequences(r, d);
  AttentionTensors call(d, std::move(s));
  fill_inputs(r, call);
  const Sequences& seq = call.sequences();
  const int64_t dv = reference::value_head_dim_of(d), kv_heads = reference::kv_heads_of(d);
  poison_unread(call, Tensor::q, d.q_strides, d.heads, d.q_len, d.head_dim, seq.q_lengths);
  poison_unread(call, Tensor::k, d.k_strides, kv_heads, d.kv_len, d.head_dim, seq.kv_lengths);
  poison_unread(call, Tensor::v, d.v_strides, kv_heads, d.kv_len, dv, seq.kv_lengths);
  return call;
}

// ALiBi's bias is slope * d rounded to fp32 (posenc/bias.h): an error of up
// to |slope d| 2^-24 in a score, which the softmax's scaling may double,
// and errors e in the scores move the weights by up to 2 max |e|, the
// outputs (|v| < 1) as much. Slopes are below 1 (given, or the standard
// ones) and distances below |offset| + q_len + kv_len.
double alibi_rounding(const AttentionTensors& call) {
  const posenc_attention_desc& d = call.desc();
  if (d.bias != POSENC_BIAS_ALIBI) return 0.0;
  int64_t offset = std::abs(d.query_offset);
  for (int64_t o : call.sequences().query_offsets) offset = std::max(offset, std::abs(o));
  return 0x1p-22 * double(offset + d.q_len + d.kv_len);
}

// posenc's output against the reference: fp32 within 1e-5 + 1e-4 |want|
// (and ALiBi's rounding), bf16 by its bound; rows that see no key and rows
// past q_lengths, exact zeros in the reference, exact zeros in the output.
::testing::AssertionResult matches_reference(posenc_context* context,
                                             const AttentionTensors& call) {
  const std::vector<float> got = run(context, call, true);
  const std::vector<double> want = reference::attention(call.desc(), call.reference());
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0.0 && got[i] != 0.0f) {
      return ::testing::AssertionFailure()
             << "output " << i << " is " << got[i] << ", the reference's exact zero";
    }
  }
  return close_to_reference(got, want, call, 1e-5 + alibi_rounding(call), 1e-4);
}

class AttentionRandom : public IsaTest {};

TEST_P(AttentionRandom, MatchesReference) {
  uint32_t refused = 0, split_keys = 0, stacked_heads = 0, key_blocks = 0;
  for (uint32_t n = 0; n < kCalls; ++n) {
    const AttentionTensors call = random_call(kSeed + n);
    const posenc_attention_desc& d = call.desc();
    SCOPED_TRACE("seed " + std::to_string(kSeed + n) + ": " + describe(call));
    // (A call that refuses the tensors fails in run().)
    size_t bytes = 0;
    if (posenc_attention_workspace_size(context(), &d, &bytes) != POSENC_OK) {
      ADD_FAILURE() << "refused: " << posenc_last_error();
      ++refused;
      continue;
    }
    EXPECT_TRUE(matches_reference(context(), call));
    // (The blocks follow the problem and the ISA path, not the threads.)
    const ops::AttentionBlocking plan =
        ops::plan_attention(ops::make_attention_problem(d), 2, GetParam()).blocking;
    split_keys += plan.splits_keys();
    stacked_heads += plan.stacked_heads > 1;
    key_blocks += plan.key_block < d.kv_len && !plan.splits_keys();
  }
  EXPECT_EQ(refused, 0u) << "of " << kCalls << " valid descs";
  // The draws reach the plans the decode and long shapes are there for.
  EXPECT_GE(split_keys, 25u);
  EXPECT_GE(stacked_heads, 5u);
  EXPECT_GE(key_blocks, 3u);
}

TEST_P(AttentionRandom, SameBitsAtAnyThreadCount) {
  for (uint32_t n = 0; n < kCalls; n += kThreadsPeriod) {
    const AttentionTensors call = random_call(kSeed + n);
    SCOPED_TRACE("seed " + std::to_string(kSeed + n) + ": " + describe(call));
    EXPECT_TRUE(same_bits_at_1_to_3_threads(GetParam(), call));
  }
}

POSENC_INSTANTIATE_ISA_TESTS(AttentionRandom);

}  // namespace
}  // namespace posenc::test
