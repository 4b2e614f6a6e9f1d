#include "attention_tensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>

#include "compare.hpp"
#include "posenc/posenc.hpp"

namespace posenc::test {
namespace {

std::string list(const std::vector<int64_t>& values) {
  std::ostringstream s;
  for (size_t i = 0; i < values.size(); ++i) s << (i == 0 ? "{" : ",") << values[i];
  return s.str() + "}";
}

std::string list(const posenc_token_strides& s) {
  return list(std::vector<int64_t>{s.batch, s.head, s.token});
}

}  // namespace

std::string describe(const posenc_attention_desc& d) {
  std::ostringstream s;
  s.precision(std::numeric_limits<float>::max_digits10);
  s << "B " << d.batch << " H " << d.heads << " kv_heads " << d.kv_heads << " Tq " << d.q_len
    << " Tk " << d.kv_len << " d " << d.head_dim << " dv " << d.value_head_dim << " layout "
    << d.layout << " dtype " << d.dtype << " out_dtype " << d.out_dtype << " scale " << d.scale
    << " causal " << d.causal << " offset " << d.query_offset << " bias " << d.bias << " per_head "
    << d.tables_per_head << " scaled_q " << d.bias_uses_scaled_q << " K " << d.max_distance
    << " values " << d.relative_values << " map " << d.map_height << "x" << d.map_width
    << " kv_map " << d.kv_map_height << "x" << d.kv_map_width << " order " << d.relative_order
    << " class_token " << d.class_token << " buckets " << d.num_buckets << " bidirectional "
    << d.bidirectional << " mask " << d.mask_batch << "x" << d.mask_heads << "x" << d.mask_q_len
    << " mask_dtype " << d.mask_dtype << " index_type " << d.index_type << " window "
    << d.sliding_window << " sinks " << d.sinks << " softcap " << d.softcap
    << " relative_query_bias " << d.relative_query_bias << " bias_gate " << d.bias_gate;
  if (d.layout == POSENC_LAYOUT_STRIDED) {
    s << " q_strides " << list(d.q_strides) << " k_strides " << list(d.k_strides) << " v_strides "
      << list(d.v_strides) << " out_strides " << list(d.out_strides);
  }
  return s.str();
}

std::string describe(const AttentionTensors& call) {
  const posenc_attention_desc& d = call.desc();
  const Sequences& seq = call.sequences();
  std::string s = describe(d);
  if (!seq.kv_lengths.empty()) s += " kv_lengths " + list(seq.kv_lengths);
  if (!seq.q_lengths.empty()) s += " q_lengths " + list(seq.q_lengths);
  if (!seq.query_offsets.empty()) s += " query_offsets " + list(seq.query_offsets);
  if (d.bias == POSENC_BIAS_ALIBI) s += call.get(Tensor::table) ? " slopes" : " NULL slopes";
  return s;
}

int64_t relative_rows(const posenc_attention_desc& d, const std::vector<int64_t>& query_offsets) {
  if (d.max_distance > 0) return 2 * d.max_distance + 1;
  int64_t offset = d.query_offset;
  for (int64_t o : query_offsets) offset = std::max(offset, o);
  return std::max<int64_t>(offset, 0) + d.q_len + d.kv_len - 1;
}

std::vector<double> softmax_rows_times(const std::vector<double>& scores, int64_t rows,
                                       int64_t keys, const float* v, int64_t d) {
  std::vector<double> out(size_t(rows * d), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = &scores[size_t(i * keys)];
    const double max_score = *std::max_element(row, row + keys);
    double sum = 0.0;
    for (int64_t j = 0; j < keys; ++j) sum += std::exp(row[j] - max_score);
    for (int64_t j = 0; j < keys; ++j) {
      const double weight = std::exp(row[j] - max_score) / sum;
      for (int64_t c = 0; c < d; ++c) out[size_t(i * d + c)] += weight * v[j * d + c];
    }
  }
  return out;
}

std::vector<float> mask_values(size_t count, uint32_t seed, float minus_inf_below) {
  std::vector<float> m = random_floats(count, seed);
  for (float& x : m) {
    x = x < minus_inf_below ? -std::numeric_limits<float>::infinity() : 2.0f * x;
  }
  return m;
}

AttentionTensors::AttentionTensors(const posenc_attention_desc& d, Sequences s)
    : d_(d), s_(std::move(s)) {
  for (size_t i = 0; i < kCount; ++i) source_[i] = Tensor(i);
  const std::vector<int64_t>* wide[3] = {&s_.kv_lengths, &s_.q_lengths, &s_.query_offsets};
  for (size_t i = 0; i < 3; ++i) {
    for (int64_t value : *wide[i]) {
      // (An int32 copy must hold the values the reference reads.)
      if (d_.index_type == POSENC_INDEX_INT32 && int32_t(value) != value) {
        ADD_FAILURE() << "per-sequence value " << value << " does not fit index_type INT32";
      }
    }
    s32_[i].assign(wide[i]->begin(), wide[i]->end());
  }
}

bool AttentionTensors::passed_as_bf16(Tensor x) const {
  return (x == Tensor::mask ? d_.mask_dtype : d_.dtype) == POSENC_BF16;
}

void AttentionTensors::set(Tensor x, std::vector<float> values) {
  if (passed_as_bf16(x)) values = from_bf16(to_bf16(values));
  floats_[index(x)] = std::move(values);
  source_[index(x)] = x;
  offset_[index(x)] = 0;
}

void AttentionTensors::fill(Tensor x, size_t count, uint32_t seed, float low, float high) {
  set(x, random_floats(count, seed, low, high));
}

void AttentionTensors::view(Tensor x, Tensor of, size_t offset) {
  floats_[index(x)].clear();
  source_[index(x)] = source_[index(of)];
  offset_[index(x)] = offset_[index(of)] + offset;
}

const float* AttentionTensors::get(Tensor x) const {
  const std::vector<float>& f = floats_[index(source_[index(x)])];
  return f.empty() ? nullptr : f.data() + offset_[index(x)];
}

const void* AttentionTensors::pass(Tensor x) const {
  if (!passed_as_bf16(x) || get(x) == nullptr) return get(x);
  return bits_[index(source_[index(x)])].data() + offset_[index(x)];
}

const void* AttentionTensors::index_tensor(const std::vector<int64_t>& values,
                                           const std::vector<int32_t>& narrow) const {
  if (values.empty()) return nullptr;
  if (d_.index_type == POSENC_INDEX_INT64) return values.data();
  return narrow.data();
}

reference::AttentionInputs AttentionTensors::reference() const {
  reference::AttentionInputs in{
      get(Tensor::q),       get(Tensor::k),       get(Tensor::v),           get(Tensor::table),
      get(Tensor::table_h), get(Tensor::table_w), get(Tensor::value_table), get(Tensor::mask)};
  const auto or_null = [](const std::vector<int64_t>& x) { return x.empty() ? nullptr : x.data(); };
  in.kv_lengths = or_null(s_.kv_lengths);
  in.q_lengths = or_null(s_.q_lengths);
  in.query_offsets = or_null(s_.query_offsets);
  in.sinks = get(Tensor::sinks);
  in.relative_query_bias = get(Tensor::relative_query_bias);
  in.key_table = get(Tensor::key_table);
  in.bias_gate = get(Tensor::bias_gate);
  return in;
}

posenc_attention_tensors AttentionTensors::tensors(void* out) const {
  for (size_t i = 0; i < kCount; ++i) {
    bits_[i] = passed_as_bf16(Tensor(i)) ? to_bf16(floats_[i]) : std::vector<uint16_t>{};
  }
  posenc_attention_tensors t{};
  t.q = pass(Tensor::q);
  t.k = pass(Tensor::k);
  t.v = pass(Tensor::v);
  t.table = pass(Tensor::table);
  t.table_h = pass(Tensor::table_h);
  t.table_w = pass(Tensor::table_w);
  t.value_table = pass(Tensor::value_table);
  t.out = out;
  t.mask = pass(Tensor::mask);
  t.kv_lengths = index_tensor(s_.kv_lengths, s32_[0]);
  t.q_lengths = index_tensor(s_.q_lengths, s32_[1]);
  t.query_offsets = index_tensor(s_.query_offsets, s32_[2]);
  t.sinks = pass(Tensor::sinks);
  t.relative_query_bias = pass(Tensor::relative_query_bias);
  t.key_table = pass(Tensor::key_table);
  t.bias_gate = pass(Tensor::bias_gate);
  return t;
}

std::vector<float> run(posenc_context* context, const AttentionTensors& call,
                       bool asked_workspace) {
  return run(context, call, call.tensors(nullptr), asked_workspace);
}

std::vector<float> run(posenc_context* context, const AttentionTensors& call,
                       posenc_attention_tensors t, bool asked_workspace) {
  const posenc_attention_desc& d = call.desc();
  std::vector<unsigned char> workspace;
  if (asked_workspace) {
    size_t bytes = 0;
    EXPECT_EQ(posenc_attention_workspace_size(context, &d, &bytes), POSENC_OK)
        << posenc_last_error();
    workspace.resize(bytes + 1);
  }
  // An odd address: the workspace may have any alignment.
  void* const ws = asked_workspace ? workspace.data() + 1 : nullptr;
  const size_t ws_bytes = asked_workspace ? workspace.size() - 1 : 0;
  const int64_t dv = reference::value_head_dim_of(d);
  const size_t span = size_t(reference::extent_of(d, d.out_strides, d.heads, d.q_len, dv));
  GuardedFloats out(span);
  t.out = out.data();
  EXPECT_EQ(posenc_attention(context, &d, &t, ws, ws_bytes), POSENC_OK) << posenc_last_error();
  EXPECT_TRUE(out.guards_intact());
  const std::vector<float> all = as_floats(out, span, d.out_dtype);
  if (d.layout != POSENC_LAYOUT_STRIDED) return all;
  // A STRIDED out's rows, densely; every element between them must still
  // hold what it held before the call.
  GuardedFloats fresh(span);
  const std::vector<float> before = as_floats(fresh, span, d.out_dtype);
  std::vector<bool> in_rows(span, false);
  std::vector<float> rows;
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t i = 0; i < d.q_len; ++i) {
        for (int64_t c = 0; c < dv; ++c) {
          const size_t e =
              size_t(reference::index_of(d, d.out_strides, d.heads, d.q_len, b, h, i, c, dv));
          rows.push_back(all[e]);
          in_rows[e] = true;
        }
      }
    }
  }
  size_t written_between = 0;
  for (size_t e = 0; e < span; ++e) written_between += !in_rows[e] && all[e] != before[e];
  EXPECT_EQ(written_between, 0u) << "elements of out between its rows were written";
  return rows;
}

::testing::AssertionResult close_to_reference(const std::vector<float>& got,
                                              const std::vector<double>& want,
                                              const AttentionTensors& call, double atol,
                                              double rtol) {
  const posenc_attention_desc& d = call.desc();
  return attention_close(
      got, want, d.dtype == POSENC_BF16 || d.out_dtype == POSENC_BF16,
      [&] { return reference::attention_value_magnitudes(d, call.reference()); }, atol, rtol);
}

::testing::AssertionResult same_bits_at_1_to_3_threads(posenc_isa isa,
                                                       const AttentionTensors& call) {
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    posenc_context* raw = nullptr;
    if (posenc_context_create(isa, threads, &raw) != POSENC_OK) {
      return ::testing::AssertionFailure() << posenc_last_error();
    }
    const std::unique_ptr<posenc_context, void (*)(posenc_context*)> context(
        raw, posenc_context_destroy);
    const std::vector<float> got = run(context.get(), call, true);
    if (first.empty()) first = got;
    if (got.size() != first.size() ||
        std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "other bits at " << threads << " threads";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace posenc::test
