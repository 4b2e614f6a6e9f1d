// Fused attention with relative positions (fp32 and bf16) and the BoTNet
// bottleneck block. fp32 is timed against the unfused way on the same oneDNN
// (attention_unfused.hpp), bf16 against the fused fp32 call; strided layouts
// (a packed qkv, a KV cache) against the same call on dense BHTD tensors.
//
// FLOPs counted: 2*B*H*(d + dv) per (query, key) pair a query sees for
// q k^T and a v (Tq*Tk pairs; with causal, the keys up to each query's
// position, about half: the work a causal kernel has to do), plus the
// products with the position tables at the size the unfused way computes
// them, each query against every row (ABSOLUTE: R of Tk rows; 1D: of
// Tq+Tk-1 rows, or 2K+1 clipped, 2*B*H*Tq*rows*d, and the probabilities
// against the value table's rows, 2*B*H*Tq*rows*dv; 2D:
// 2*B*H*N*(2X-1 + 2Y-1)*d; disentangled: q's and k's against the 2S rows
// of each table, 2*B*H*(Tq+Tk)*2S*d); the BoTNet block adds its 1x1 qkv projection,
// 2*B*N*C*3*H*d. Bytes: what the call
// reads and writes (with grouped kv heads, k and v of kv_heads heads; of k
// and v, the keys its queries see: a decode step's bytes are its keys and
// values, so "of memcpy" is its read bandwidth against the copy's).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cases/attention_unfused.hpp"
#include "cases/case.hpp"
#include "cases/values.hpp"
#include "ops/attention/position_bias.hpp"
#include "ops/attention/problem.hpp"
#include "ops/relative/disentangled_index.hpp"
#include "posenc/attention.hpp"
#include "reference/attention.hpp"
#include "reference/relative.hpp"

namespace posenc::cases {
namespace {

// Outputs are weighted means of values in [-1, 1): fp32 rounding stays far
// below 1e-4. bf16 attention within the tests' bound, in units of m + |want|
// (values.hpp's kBf16AttentionTolerance); the bf16 bottleneck block, which
// rounds its projections to bf16, within 2e-2.
constexpr double kF32Tolerance = 1e-4;
constexpr double kBf16BottleneckTolerance = 2e-2;

bool is_2d(const posenc_attention_desc& d) { return d.bias == POSENC_BIAS_RELATIVE_2D; }
int64_t rows_h(const posenc_attention_desc& d) {
  return 2 * std::max(d.map_height, d.kv_map_height) - 1;
}
int64_t rows_w(const posenc_attention_desc& d) {
  return 2 * std::max(d.map_width, d.kv_map_width) - 1;
}

// Floats of such a kind's table as the model stores it (ALiBi: none, the
// standard slopes).
size_t position_table_floats(const posenc_attention_desc& d) {
  switch (d.bias) {
    case POSENC_BIAS_TABLE_2D:
      return size_t(((2 * d.map_height - 1) * (2 * d.map_width - 1) + 3 * d.class_token) *
                    d.heads);
    case POSENC_BIAS_TABLE_1D: return size_t(d.heads * (2 * d.max_distance + 1));
    case POSENC_BIAS_T5: return size_t(d.num_buckets * d.heads);
    default: return 0;
  }
}

size_t mask_elements(const posenc_attention_desc& d) {
  return size_t(d.mask_batch * d.mask_heads * d.mask_q_len * d.kv_len);
}

int64_t kv_heads_of(const posenc_attention_desc& d) {
  return d.kv_heads == 0 ? d.heads : d.kv_heads;
}

bool same_strides(const posenc_token_strides& a, const posenc_token_strides& b) {
  return a.batch == b.batch && a.head == b.head && a.token == b.token;
}

// Whether q, k and v have the strides of one packed qkv tensor
// (posenc::packed_qkv): the problem then passes them as views of one buffer.
bool is_packed_qkv(const posenc_attention_desc& d) {
  if (d.layout != POSENC_LAYOUT_STRIDED || d.q_len != d.kv_len) return false;
  const posenc_token_strides p =
      packed_qkv(d.q_len, d.heads, kv_heads_of(d), d.head_dim).strides;
  return same_strides(d.q_strides, p) && same_strides(d.k_strides, p) &&
         same_strides(d.v_strides, p);
}

// A STRIDED desc whose out is dense BTHD, as BTHD throughout: its dense
// baseline, which writes the same output.
bool has_dense_bthd_out(const posenc_attention_desc& d) {
  return d.layout == POSENC_LAYOUT_STRIDED &&
         same_strides(d.out_strides,
                      dense_strides(POSENC_LAYOUT_BTHD, d.heads, d.q_len, d.head_dim));
}
posenc_attention_desc as_dense_bthd(posenc_attention_desc d) {
  d.layout = POSENC_LAYOUT_BTHD;
  d.q_strides = d.k_strides = d.v_strides = d.out_strides = posenc_token_strides{};
  return d;
}

// The rows of a tensor of `from` (strides s) copied densely as `to` lays
// them out.
std::vector<unsigned char> dense_copy(const posenc_attention_desc& from,
                                      const posenc_token_strides& s,
                                      const posenc_attention_desc& to, int64_t heads,
                                      int64_t tokens, const void* x, size_t element_bytes) {
  const size_t row = size_t(to.head_dim) * element_bytes;
  std::vector<unsigned char> dense(size_t(to.batch * heads * tokens) * row);
  for (int64_t b = 0; b < to.batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t source = reference::index_of(from, s, heads, tokens, b, h, t, 0);
        const int64_t target = reference::index_of(to, {}, heads, tokens, b, h, t, 0);
        std::memcpy(&dense[size_t(target) * element_bytes],
                    static_cast<const unsigned char*>(x) + size_t(source) * element_bytes, row);
      }
    }
  }
  return dense;
}

const char* bias_name(const posenc_attention_desc& d) {
  switch (d.bias) {
    case POSENC_BIAS_RELATIVE_2D: return "2D";
    case POSENC_BIAS_RELATIVE_1D: return "1D";
    case POSENC_BIAS_ABSOLUTE: return "absolute";
    case POSENC_BIAS_TABLE_2D: return d.class_token ? "table2D+cls" : "table2D";
    case POSENC_BIAS_TABLE_1D: return "table1D";
    case POSENC_BIAS_T5: return d.bidirectional ? "T5" : "T5-uni";
    case POSENC_BIAS_ALIBI: return d.bidirectional ? "ALiBi-bidi" : "ALiBi";
    case POSENC_BIAS_DISENTANGLED: return "disentangled";
    default: return "plain";
  }
}

std::string describe(const posenc_attention_desc& d) {
  std::string s = std::string(bias_name(d)) + " B" + std::to_string(d.batch) + " H" +
                  std::to_string(d.heads) + " ";
  if (kv_heads_of(d) != d.heads) s += "kv" + std::to_string(d.kv_heads) + " ";
  if (is_2d(d) || d.bias == POSENC_BIAS_TABLE_2D) {
    s += std::to_string(d.map_height) + "x" + std::to_string(d.map_width);
    if (d.kv_map_height > 0) {
      s += " keys " + std::to_string(d.kv_map_height) + "x" + std::to_string(d.kv_map_width);
    }
    if (d.relative_order == POSENC_RELATIVE_QUERY_MINUS_KEY) s += " q-k";
    if (!d.bias_uses_scaled_q) s += " unscaled-q";
  } else if (d.q_len == d.kv_len) {
    s += "T" + std::to_string(d.q_len);
  } else {
    s += "Tq" + std::to_string(d.q_len) + " Tk" + std::to_string(d.kv_len);
  }
  s += " d" + std::to_string(d.head_dim);
  if (d.layout == POSENC_LAYOUT_BTHD) s += " BTHD";
  if (d.layout == POSENC_LAYOUT_STRIDED) s += is_packed_qkv(d) ? " packed-qkv" : " strided";
  if (d.tables_per_head) s += " per-head";
  if (d.query_offset != 0) s += " @" + std::to_string(d.query_offset);
  if (d.num_buckets > 0) s += " buckets" + std::to_string(d.num_buckets);
  if (d.max_distance > 0) s += " K" + std::to_string(d.max_distance);
  if (d.causal) s += " causal";
  if (d.sliding_window > 0) s += " window" + std::to_string(d.sliding_window);
  if (d.sinks) s += " sinks";
  if (d.relative_query_bias) s += " query-bias";
  if (d.bias_gate) s += " gated";
  if (d.softcap > 0) {
    char cap[32];
    std::snprintf(cap, sizeof cap, " softcap%g", double(d.softcap));
    s += cap;
  }
  if (d.relative_values) s += " values";
  if (d.mask_batch > 0) {
    s += std::string(" mask") + (d.mask_dtype == POSENC_BF16 ? "-bf16" : "") + "[" +
         std::to_string(d.mask_batch) + "," + std::to_string(d.mask_heads) + "," +
         (d.mask_q_len == 1 ? "1" : "T") + ",T]";
  }
  return s;
}

// Rows of the 1D table (and of the value table), as posenc/attention.h says.
int64_t table_rows(const posenc_attention_desc& d) {
  return reference::table_rows_1d(d.query_offset, d.q_len, d.kv_len, d.max_distance);
}

// Rows of each DISENTANGLED table.
int64_t disentangled_rows(const posenc_attention_desc& d) {
  return disentangled_index(d.num_buckets, d.max_distance).rows();
}

// The (query, key) pairs of a head that take part.
double visible_pairs(const posenc_attention_desc& d) {
  double pairs = 0.0;
  for (int64_t i = 0; i < d.q_len; ++i) {
    const reference::VisibleKeys keys = reference::visible_keys(d, d.query_offset + i, d.kv_len);
    pairs += double(std::max<int64_t>(keys.end - keys.first, 0));
  }
  return pairs;
}

// As the file's header counts them.
double flops_of(const posenc_attention_desc& d) {
  const double bh = double(d.batch * d.heads), q = double(d.q_len);
  const double dh = double(d.head_dim), dv = double(reference::value_head_dim_of(d));
  double bias_rows = 0.0;
  if (is_2d(d)) {
    bias_rows = double(rows_h(d) + rows_w(d));
  } else if (d.bias == POSENC_BIAS_ABSOLUTE) {
    bias_rows = double(d.kv_len);
  } else if (d.bias == POSENC_BIAS_RELATIVE_1D) {
    bias_rows = double(table_rows(d));
  } else if (d.bias == POSENC_BIAS_DISENTANGLED) {  // (k's rows counted per query)
    bias_rows = double(disentangled_rows(d)) * double(d.q_len + d.kv_len) / q;
  }
  const double value_rows = d.relative_values ? double(table_rows(d)) : 0.0;
  return bh * 2.0 * (visible_pairs(d) * (dh + dv) + q * (bias_rows * dh + value_rows * dv));
}


// A mask's values: seeded in [-3, 3) with about one entry in ten -inf, as
// fp32 (rounded to bf16 for a bf16 mask) and as bf16 bits.
struct MaskValues {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
};
MaskValues mask_values(const posenc_attention_desc& d) {
  MaskValues m;
  m.f32 = seeded_floats(mask_elements(d), 40);
  for (float& x : m.f32) x = x < -0.8f ? -std::numeric_limits<float>::infinity() : 3.0f * x;
  if (d.mask_dtype == POSENC_BF16) {
    m.bf16 = to_bf16(m.f32);
    m.f32 = from_bf16(m.bf16);
  }
  return m;
}

// The share of the keys some query sees (one range: the visible keys move
// with the queries): a sliding window's, those up to the last query's
// position with causal, all of them otherwise. (The desc's lengths only.)
double keys_seen_fraction(const posenc_attention_desc& d) {
  const int64_t first = reference::visible_keys(d, d.query_offset, d.kv_len).first;
  const int64_t end = reference::visible_keys(d, d.query_offset + d.q_len - 1, d.kv_len).end;
  return double(std::max<int64_t>(end - first, 0)) / double(d.kv_len);
}

// One sequence of a padded batch's desc, alone and unpadded.
posenc_attention_desc sequence_alone(posenc_attention_desc d, int64_t length) {
  d.batch = 1;
  d.q_len = d.kv_len = length;
  return d;
}

// Inputs q, k, v (or one packed qkv), then the tables the desc uses (R, or
// Rh and Rw; RV), as fp32 values (rounded to bf16 for bf16 descs) and as
// bf16 bits, and the mask (mask_values). STRIDED tensors span their extents.
class AttentionBuffers {
 public:
  // lengths: each sequence's kv and q length (none if empty).
  explicit AttentionBuffers(const posenc_attention_desc& d, std::vector<int32_t> lengths = {})
      : desc_(d), lengths_(std::move(lengths)) {
    const int64_t kv_heads = kv_heads_of(d);
    const auto extent = [&d](const posenc_token_strides& s, int64_t heads, int64_t tokens) {
      return size_t(reference::extent_of(d, s, heads, tokens));
    };
    const size_t v = extent(d.v_strides, kv_heads, d.kv_len);
    std::vector<size_t> sizes;
    if (is_packed_qkv(d)) {
      const PackedQkv packed = packed_qkv(d.q_len, d.heads, kv_heads, d.head_dim);
      k_offset_ = size_t(packed.k_offset);
      v_offset_ = size_t(packed.v_offset);
      sizes.push_back(v_offset_ + v);
    } else {
      sizes = {extent(d.q_strides, d.heads, d.q_len), extent(d.k_strides, kv_heads, d.kv_len), v};
    }
    qkv_buffers_ = sizes.size();
    const size_t rows = size_t(d.tables_per_head ? d.heads : 1) * size_t(d.head_dim);
    if (is_2d(d)) {
      sizes.push_back(size_t(rows_h(d)) * rows);
      sizes.push_back(size_t(rows_w(d)) * rows);
    } else if (d.bias == POSENC_BIAS_ABSOLUTE) {
      sizes.push_back(size_t(d.kv_len) * rows);
    } else if (d.bias == POSENC_BIAS_RELATIVE_1D) {
      sizes.push_back(size_t(table_rows(d)) * rows);
    } else if (d.bias == POSENC_BIAS_DISENTANGLED) {  // table, key_table
      sizes.insert(sizes.end(), 2, size_t(disentangled_rows(d)) * rows);
    } else if (position_table_floats(d) > 0) {
      sizes.push_back(position_table_floats(d));
    }
    if (d.relative_values) sizes.push_back(size_t(table_rows(d)) * rows);
    if (d.sinks) sizes.push_back(size_t(d.heads));
    if (d.relative_query_bias) sizes.push_back(size_t(d.heads * d.head_dim));
    if (d.bias_gate) sizes.push_back(size_t(d.batch * d.heads * d.q_len));
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uint32_t seed = uint32_t(20 + i);
      if (d.dtype == POSENC_BF16) {
        f32_.push_back(shared_bf16_values(sizes[i], seed));
        bf16_.push_back(shared_bf16_bits(sizes[i], seed));
      } else {
        f32_.push_back(shared_floats(sizes[i], seed));
      }
    }
    if (d.mask_batch > 0) mask_ = mask_values(d);
    out_.resize(extent(d.out_strides, d.heads, d.q_len));
  }

  const posenc_attention_desc& desc() const { return desc_; }

  // The fused call in `dtype` with a workspace sized on first use, with the
  // lengths or (padded) without.
  posenc_status run(posenc_context* context, posenc_dtype dtype, bool with_lengths = true) {
    posenc_attention_desc d = desc_;
    d.dtype = dtype;
    size_t bytes = 0;
    const posenc_status status = posenc_attention_workspace_size(context, &d, &bytes);
    if (status != POSENC_OK) return status;
    if (workspace_.size() < bytes) workspace_.resize(bytes);
    posenc_attention_tensors t = tensors(dtype);
    if (!with_lengths) t.kv_lengths = t.q_lengths = nullptr;
    return posenc_attention(context, &d, &t, workspace_.data(), bytes);
  }

  // A padded batch (BTHD, q_len = kv_len, shared unclipped 1D table, fp32)
  // the way a caller without lengths runs it: each sequence alone, unpadded,
  // in place (its first tokens are a batch-1 BTHD tensor, its table the
  // middle 2L-1 rows of the shared one), the padding rows of out zeroed.
  void run_one_by_one() {
    const posenc_attention_tensors all = tensors(POSENC_F32);
    const posenc_attention_desc& d = desc_;
    std::fill(out_.begin(), out_.end(), 0.0f);
    for (size_t b = 0; b < lengths_.size(); ++b) {
      const int64_t length = lengths_[b];
      if (length == 0) continue;
      const posenc_attention_desc one = sequence_alone(d, length);
      const int64_t first = int64_t(b) * d.q_len * d.heads * d.head_dim;
      const auto at = [](const void* x, int64_t offset) {
        return static_cast<const float*>(x) + offset;
      };
      posenc_attention_tensors t = all;
      t.kv_lengths = t.q_lengths = nullptr;
      t.q = at(all.q, first);
      t.k = at(all.k, first);
      t.v = at(all.v, first);
      t.table = at(all.table, (d.q_len - length) * d.head_dim);
      t.out = out_.data() + first;
      size_t bytes = 0;
      posenc_attention_workspace_size(nullptr, &one, &bytes);
      if (workspace_.size() < bytes) workspace_.resize(bytes);
      posenc_attention(nullptr, &one, &t, workspace_.data(), bytes);
    }
  }

  void run_unfused() {
    if (!unfused_) unfused_ = std::make_unique<UnfusedAttention>(desc_);
    unfused_->run(nullptr, tensors(POSENC_F32));
  }

  // The same call (has_dense_bthd_out) on dense BTHD copies of q, k and v,
  // into this problem's output; its workspace sized on first use.
  void run_dense() {
    const posenc_attention_desc d = as_dense_bthd(desc_);
    posenc_attention_tensors t = tensors(d.dtype);
    if (dense_qkv_.empty()) {
      const size_t es = d.dtype == POSENC_BF16 ? 2 : 4;
      const int64_t kv_heads = kv_heads_of(d);
      dense_qkv_.push_back(dense_copy(desc_, desc_.q_strides, d, d.heads, d.q_len, t.q, es));
      dense_qkv_.push_back(dense_copy(desc_, desc_.k_strides, d, kv_heads, d.kv_len, t.k, es));
      dense_qkv_.push_back(dense_copy(desc_, desc_.v_strides, d, kv_heads, d.kv_len, t.v, es));
      size_t bytes = 0;
      posenc_attention_workspace_size(nullptr, &d, &bytes);
      dense_workspace_.resize(bytes);
    }
    t.q = dense_qkv_[0].data();
    t.k = dense_qkv_[1].data();
    t.v = dense_qkv_[2].data();
    posenc_attention(nullptr, &d, &t, dense_workspace_.data(), dense_workspace_.size());
  }

  std::vector<double> reference() { return with_sequence_lengths(inputs(), reference::attention); }

  // The reference on |v| and |value_table| (the bf16 error bound's m).
  std::vector<double> magnitudes() {
    return with_sequence_lengths(inputs(), reference::attention_value_magnitudes);
  }

  // The output as the reference gives it (a STRIDED one densely).
  std::vector<float> out() const {
    const posenc_attention_desc& d = desc_;
    if (d.layout != POSENC_LAYOUT_STRIDED) return out_;
    std::vector<float> rows;
    rows.reserve(size_t(d.batch * d.heads * d.q_len * d.head_dim));
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t h = 0; h < d.heads; ++h) {
        for (int64_t i = 0; i < d.q_len; ++i) {
          const float* row = &out_[size_t(reference::index_of(d, d.out_strides, d.heads,
                                                              d.q_len, b, h, i, 0))];
          rows.insert(rows.end(), row, row + d.head_dim);
        }
      }
    }
    return rows;
  }

  double bytes() const {
    // Separate k and v (f32_[1] and f32_[2]) read as far as queries see them.
    const double kv_read = qkv_buffers_ == 3 ? keys_seen_fraction(desc_) : 1.0;
    double elements = 0;
    for (size_t i = 0; i < f32_.size(); ++i) {
      elements += double(f32_[i]->size()) * (i == 1 || i == 2 ? kv_read : 1.0);
    }
    const double mask_bytes =
        double(mask_elements(desc_)) * (desc_.mask_dtype == POSENC_BF16 ? 2 : 4);
    return elements * (desc_.dtype == POSENC_BF16 ? 2 : 4) + mask_bytes + out_bytes();
  }
  double out_bytes() const {
    return double(desc_.batch * desc_.heads * desc_.q_len * desc_.head_dim) * sizeof(float);
  }

 private:
  posenc_attention_tensors tensors(posenc_dtype dtype) {
    const auto pass = [&](size_t i) -> const void* {
      if (dtype == POSENC_BF16) return bf16_[i]->data();
      return f32_[i]->data();
    };
    posenc_attention_tensors t{};
    t.q = pass(0);
    if (qkv_buffers_ == 1) {  // views of one packed qkv
      const size_t es = dtype == POSENC_BF16 ? 2 : 4;
      t.k = static_cast<const char*>(t.q) + k_offset_ * es;
      t.v = static_cast<const char*>(t.q) + v_offset_ * es;
    } else {
      t.k = pass(1);
      t.v = pass(2);
    }
    t.out = out_.data();
    size_t next = qkv_buffers_;
    if (is_2d(desc_)) {
      t.table_h = pass(next++);
      t.table_w = pass(next++);
    } else if (desc_.bias != POSENC_BIAS_NONE &&
               (!ops::is_position_bias(desc_.bias) || position_table_floats(desc_) > 0)) {
      t.table = pass(next++);
      if (desc_.bias == POSENC_BIAS_DISENTANGLED) t.key_table = pass(next++);
    }
    if (desc_.relative_values) t.value_table = pass(next++);
    if (desc_.sinks) t.sinks = pass(next++);
    if (desc_.relative_query_bias) t.relative_query_bias = pass(next++);
    if (desc_.bias_gate) t.bias_gate = pass(next);
    if (desc_.mask_batch > 0) {
      t.mask = desc_.mask_dtype == POSENC_BF16 ? static_cast<const void*>(mask_.bf16.data())
                                               : mask_.f32.data();
    }
    if (!lengths_.empty()) t.kv_lengths = t.q_lengths = lengths_.data();
    return t;
  }

  reference::AttentionInputs inputs() {
    const posenc_attention_tensors t = tensors(POSENC_F32);
    const auto f = [](const void* p) { return static_cast<const float*>(p); };
    reference::AttentionInputs in{f(t.q),           f(t.k),          f(t.v),
                                  f(t.table),       f(t.table_h),    f(t.table_w),
                                  f(t.value_table), mask_.f32.data()};
    in.sinks = f(t.sinks);
    in.relative_query_bias = f(t.relative_query_bias);
    in.key_table = f(t.key_table);
    in.bias_gate = f(t.bias_gate);
    return in;
  }

  // reference_loop(desc, in) with the sequence lengths as int64.
  template <class ReferenceLoop>
  std::vector<double> with_sequence_lengths(reference::AttentionInputs in,
                                            const ReferenceLoop& reference_loop) const {
    const std::vector<int64_t> lengths(lengths_.begin(), lengths_.end());
    if (!lengths.empty()) in.kv_lengths = in.q_lengths = lengths.data();
    return reference_loop(desc_, in);
  }

  posenc_attention_desc desc_;
  std::vector<int32_t> lengths_;
  MaskValues mask_;
  std::vector<Shared<float>> f32_;
  std::vector<Shared<uint16_t>> bf16_;
  std::vector<float> out_;
  size_t qkv_buffers_;              // 3, or 1 for a packed qkv
  size_t k_offset_ = 0, v_offset_ = 0;  // of k and v in a packed qkv, in elements
  std::vector<unsigned char> workspace_;
  std::unique_ptr<UnfusedAttention> unfused_;  // created when first timed
  std::vector<std::vector<unsigned char>> dense_qkv_;  // run_dense's inputs and
  std::vector<unsigned char> dense_workspace_;          // workspace, made at first use
};

Problem problem_of(const std::shared_ptr<AttentionBuffers>& b) {
  Problem p;
  p.bytes = b->bytes();
  p.write_bytes = b->out_bytes();
  p.flops = flops_of(b->desc());
  // bf16 widened to fp32 GEMMs where the attention's GEMMs do not run in bf16.
  p.gemm_type = ops::attention_gemm_dtype(b->desc().dtype);
  p.run = [b](posenc_context* ctx) { return b->run(ctx, b->desc().dtype); };
  p.output = [b] { return b->out(); };
  p.reference = [b] { return b->reference(); };
  if (b->desc().dtype == POSENC_BF16) {
    p.error_units = [b](const std::vector<double>& want) {
      return bf16_attention_units(b->magnitudes(), want);
    };
  }
  return p;
}

Problem attention_problem(const posenc_attention_desc& d) {
  auto b = std::make_shared<AttentionBuffers>(d);
  Problem p = problem_of(b);
  if (d.dtype == POSENC_BF16) {
    p.baseline = [b] { b->run(nullptr, POSENC_F32); };
  } else if (UnfusedAttention::applies(d)) {
    p.baseline = [b] { b->run_unfused(); };
  }
  return p;
}

// Layouts and grouped heads: a STRIDED desc with a BTHD out set against the
// same call on dense BTHD tensors.
Problem layout_problem(const posenc_attention_desc& d) {
  auto b = std::make_shared<AttentionBuffers>(d);
  Problem p = problem_of(b);
  if (has_dense_bthd_out(d)) p.baseline = [b] { b->run_dense(); };
  return p;
}

const Op<posenc_attention_desc> kAttentionF32{
    "attention", "attention_f32", kF32Tolerance, "dense", describe, layout_problem};
const Op<posenc_attention_desc> kAttentionBf16{
    "attention", "attention_bf16", kBf16AttentionTolerance,
    "fused_f32", describe,         attention_problem};
const Op<posenc_attention_desc> kAttention1dF32{
    "attention", "attention_1d_f32", kF32Tolerance, "unfused", describe, attention_problem};
const Op<posenc_attention_desc> kAttention1dBf16{
    "attention", "attention_1d_bf16", kBf16AttentionTolerance, "fused_f32",
    describe,    attention_problem};
const Op<posenc_attention_desc> kAttention2dF32{
    "attention", "attention_2d_f32", kF32Tolerance, "unfused", describe, attention_problem};
const Op<posenc_attention_desc> kAttention2dBf16{
    "attention", "attention_2d_bf16", kBf16AttentionTolerance, "fused_f32",
    describe,    attention_problem};

// The bias kinds without q (TABLE_2D, TABLE_1D, T5, ALIBI) against the
// unfused way (their dense bias materialized by posenc_position_bias, added
// with the mask, softmax, GEMM); each with a row of plain attention of the
// same shape (mask and causal kept) in attention_family_plain_f32, for the
// bias's cost (`posenc bench --filter attention_family` shows both).
const Op<posenc_attention_desc> kAttentionFamilyF32{
    "attention", "attention_family_f32", kF32Tolerance, "unfused", describe, attention_problem};
const Op<posenc_attention_desc> kAttentionFamilyPlainF32{
    "attention", "attention_family_plain_f32", kF32Tolerance, "", describe, attention_problem};

// Descs: 1D relative over T tokens, 2D relative over a map; plain
// attention and the options after.
posenc_attention_desc desc_1d(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                              int64_t head_dim, posenc_dtype dtype = POSENC_F32) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, batch, heads, q_len, kv_len, head_dim);
  d.dtype = dtype;
  d.bias = POSENC_BIAS_RELATIVE_1D;
  return d;
}
posenc_attention_desc desc_2d(int64_t batch, int64_t heads, int64_t height, int64_t width,
                              int64_t head_dim, posenc_dtype dtype = POSENC_F32) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, batch, heads, height * width, height * width, head_dim);
  d.dtype = dtype;
  d.bias = POSENC_BIAS_RELATIVE_2D;
  d.map_height = height;
  d.map_width = width;
  return d;
}
// SAM's attention: its tables as stored (query minus key), the logits from
// the unscaled q, keys on a map of kv_height x kv_width (0: the query map).
posenc_attention_desc sam(posenc_attention_desc d, int64_t kv_height = 0, int64_t kv_width = 0) {
  d.relative_order = POSENC_RELATIVE_QUERY_MINUS_KEY;
  d.bias_uses_scaled_q = 0;
  if (kv_height > 0) {
    d.kv_map_height = kv_height;
    d.kv_map_width = kv_width;
    d.kv_len = kv_height * kv_width;
  }
  return d;
}
posenc_attention_desc per_head(posenc_attention_desc d) {
  d.tables_per_head = 1;
  return d;
}
// Decoding-style options: BTHD, clipped at K, causal from `offset`, relative values.
posenc_attention_desc decoding(posenc_attention_desc d, int64_t max_distance, int64_t offset) {
  d.layout = POSENC_LAYOUT_BTHD;
  d.max_distance = max_distance;
  d.causal = 1;
  d.query_offset = offset;
  d.relative_values = 1;
  return d;
}
// A decode step of serving: the newest query (or queries) against the whole
// cache, 1D bias clipped at 128 (its table is small: the time is the reading
// of k and v, against a memcpy of the same bytes).
posenc_attention_desc decode_step(posenc_attention_desc d) {
  d.max_distance = 128;
  d.causal = 1;
  d.query_offset = d.kv_len - d.q_len;
  return d;
}

// --- a padded batch: sequences of different lengths (kv_lengths and
// q_lengths) in one BTHD batch, 1D relative bias; timed against its
// sequences run one by one unpadded (AttentionBuffers::run_one_by_one),
// and, in the rows of attention_1d_f32, the same batch without lengths.
struct PaddedBatch {
  posenc_attention_desc desc;  // batch = lengths.size(), T = the longest
  std::vector<int32_t> lengths;
};

std::string describe_padded(const PaddedBatch& p) {
  std::string lengths;
  for (int32_t length : p.lengths) lengths += (lengths.empty() ? "" : ",") + std::to_string(length);
  return describe(p.desc) + " lengths " + lengths;
}

Problem padded_problem(const PaddedBatch& spec) {
  auto b = std::make_shared<AttentionBuffers>(spec.desc, spec.lengths);
  Problem p = attention_problem(spec.desc);  // the padded batch's bytes
  p.flops = 0;  // of the real tokens, as the sequences alone count them
  for (int32_t length : spec.lengths) p.flops += flops_of(sequence_alone(spec.desc, length));
  p.run = [b](posenc_context* ctx) { return b->run(ctx, b->desc().dtype); };
  p.output = [b] { return b->out(); };
  p.reference = [b] { return b->reference(); };
  p.baseline = [b] { b->run_one_by_one(); };
  return p;
}

const Op<PaddedBatch> kPaddedBatch{"attention", "attention_padded_f32", kF32Tolerance,
                                   "one_by_one", describe_padded, padded_problem};

// Sequences of `lengths` padded to the longest: BTHD, 1D relative bias.
PaddedBatch padded(int64_t heads, int64_t head_dim, std::vector<int32_t> lengths) {
  const int32_t longest = *std::max_element(lengths.begin(), lengths.end());
  posenc_attention_desc d = desc_1d(int64_t(lengths.size()), heads, longest, longest, head_dim);
  d.layout = POSENC_LAYOUT_BTHD;
  return PaddedBatch{d, std::move(lengths)};
}

// An additive mask of [mask_batch, mask_heads, q_len or 1, kv_len].
posenc_attention_desc with_mask(posenc_attention_desc d, int64_t mask_batch, int64_t mask_heads,
                                bool per_query, posenc_dtype mask_dtype = POSENC_F32) {
  d.mask_batch = mask_batch;
  d.mask_heads = mask_heads;
  d.mask_q_len = per_query ? d.q_len : 1;
  d.mask_dtype = mask_dtype;
  return d;
}

// The bias kinds without q.
posenc_attention_desc table_2d(int64_t batch, int64_t heads, int64_t height, int64_t width,
                               int64_t head_dim) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, batch, heads, height * width, height * width, head_dim);
  d.bias = POSENC_BIAS_TABLE_2D;
  d.map_height = height;
  d.map_width = width;
  return d;
}
posenc_attention_desc table_1d(int64_t heads, int64_t length, int64_t head_dim) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, heads, length, length, head_dim);
  d.bias = POSENC_BIAS_TABLE_1D;
  d.max_distance = length - 1;  // a table over the 2T-1 distances
  return d;
}
// T5's encoder: 32 buckets, max_distance 128, bidirectional.
posenc_attention_desc t5(int64_t batch, int64_t heads, int64_t length, int64_t head_dim) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, batch, heads, length, length, head_dim);
  d.bias = POSENC_BIAS_T5;
  d.num_buckets = 32;
  d.max_distance = 128;
  d.bidirectional = 1;
  return d;
}
// WavLM's gated relative position bias: T5's buckets (320 up to 800,
// bidirectional), each query row's bias times its gate.
posenc_attention_desc wavlm(int64_t batch, int64_t heads, int64_t length, int64_t head_dim) {
  posenc_attention_desc d = t5(batch, heads, length, head_dim);
  d.num_buckets = 320;
  d.max_distance = 800;
  d.bias_gate = 1;
  return d;
}
// The same without the gate.
posenc_attention_desc ungated(posenc_attention_desc d) {
  d.bias_gate = 0;
  return d;
}
// A causal decoder's ALiBi, the standard slopes.
posenc_attention_desc alibi(int64_t heads, int64_t length, int64_t head_dim) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, heads, length, length, head_dim);
  d.bias = POSENC_BIAS_ALIBI;
  d.causal = 1;
  return d;
}
// BEiT's windows: a class token before the map's tokens.
posenc_attention_desc with_class_token(posenc_attention_desc d) {
  d.class_token = 1;
  d.q_len = d.kv_len = d.map_height * d.map_width + 1;
  return d;
}
// T5's decoder: buckets of the keys before the query only, causal.
posenc_attention_desc t5_decoder(posenc_attention_desc d) {
  d.bidirectional = 0;
  d.causal = 1;
  return d;
}
// An encoder's ALiBi (-slope |i - j|), without the causal mask.
posenc_attention_desc bidirectional(posenc_attention_desc d) {
  d.bidirectional = 1;
  d.causal = 0;
  return d;
}
// The same shape, mask and causal flag without the bias.
posenc_attention_desc without_bias(posenc_attention_desc d) {
  d.bias = POSENC_BIAS_NONE;
  d.map_height = d.map_width = d.max_distance = d.num_buckets = 0;
  d.class_token = d.bidirectional = d.bias_gate = 0;
  return d;
}

// Plain attention (no bias) and the layout options.
posenc_attention_desc plain(int64_t batch, int64_t heads, int64_t q_len, int64_t kv_len,
                            int64_t head_dim, posenc_dtype dtype = POSENC_F32) {
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, batch, heads, q_len, kv_len, head_dim);
  d.dtype = dtype;
  return d;
}
// Learned absolute logits q R^T, R [kv_len, head_dim] shared by the heads.
posenc_attention_desc absolute_bias(posenc_attention_desc d) {
  d.bias = POSENC_BIAS_ABSOLUTE;
  return d;
}
posenc_attention_desc causal(posenc_attention_desc d) {
  d.causal = 1;
  return d;
}
posenc_attention_desc sliding(posenc_attention_desc d, int64_t window) {
  d.causal = 1;
  d.sliding_window = window;
  return d;
}
// The newest q_len tokens of the sequence as queries (a decode step).
posenc_attention_desc newest(posenc_attention_desc d) {
  d.query_offset = d.kv_len - d.q_len;
  return d;
}
// A window on both sides: keys less than `window` from the query.
posenc_attention_desc local(posenc_attention_desc d, int64_t window) {
  d.sliding_window = window;
  return d;
}
// Gemma 2's logit soft cap.
posenc_attention_desc softcapped(posenc_attention_desc d, float cap) {
  d.softcap = cap;
  return d;
}
// The Conformer's (Transformer-XL's) relative attention: per-head 1D
// tables of 2T-1 rows, their logits from q + pos_bias_v.
posenc_attention_desc conformer(posenc_attention_desc d) {
  d.tables_per_head = 1;
  d.relative_query_bias = 1;
  return d;
}
// DeBERTa's disentangled attention as transformers' DebertaV2 runs it:
// per-head tables of 2 x 256 rows (DeBERTa-v3's log buckets, M 512), the
// scale 1/sqrt(3d); B buckets and M of another size for the checks.
posenc_attention_desc deberta(posenc_attention_desc d, int64_t buckets = 256,
                              int64_t max_distance = 512) {
  d.bias = POSENC_BIAS_DISENTANGLED;
  d.tables_per_head = 1;
  d.num_buckets = buckets;
  d.max_distance = max_distance;
  d.scale = float(1.0 / std::sqrt(3.0 * double(d.head_dim)));
  return d;
}
// gpt-oss's attention sinks, a logit per head.
posenc_attention_desc with_sinks(posenc_attention_desc d) {
  d.sinks = 1;
  return d;
}
posenc_attention_desc grouped(posenc_attention_desc d, int64_t kv_heads) {
  d.kv_heads = kv_heads;
  return d;
}
// q, k, v views of one packed qkv tensor, out BTHD (as timm's attention
// reshapes it).
posenc_attention_desc packed(const posenc_attention_desc& d) {
  return packed_qkv_desc(d, POSENC_LAYOUT_BTHD);
}
// k and v from a KV cache of `capacity` tokens, q and out BTHD.
posenc_attention_desc kv_cache(posenc_attention_desc d, int64_t capacity) {
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.out_strides = dense_strides(POSENC_LAYOUT_BTHD, d.heads, d.q_len, d.head_dim);
  d.k_strides = d.v_strides = kv_cache_strides(kv_heads_of(d), capacity, d.head_dim);
  return d;
}
// k and v from a token-major KV cache [batch, capacity, kv_heads, head_dim]
// (llama.cpp's layout): each kv head's rows kv_heads x head_dim apart.
posenc_attention_desc token_major_kv_cache(posenc_attention_desc d, int64_t capacity) {
  d.layout = POSENC_LAYOUT_STRIDED;
  d.q_strides = d.out_strides = dense_strides(POSENC_LAYOUT_BTHD, d.heads, d.q_len, d.head_dim);
  const int64_t row = kv_heads_of(d) * d.head_dim;
  d.k_strides = d.v_strides = posenc_token_strides{capacity * row, d.head_dim, row};
  return d;
}

// --- bottleneck_mhsa: the BoTNet block on an NCHW map, with or without a
// qkv bias; in bf16 timed against the fp32 block on the same values.
struct BottleneckSpec {
  posenc_bottleneck_desc desc;
  bool qkv_bias;
};
std::string describe_bottleneck(const BottleneckSpec& spec) {
  const posenc_bottleneck_desc& d = spec.desc;
  std::string s = "B" + std::to_string(d.batch) + " C" + std::to_string(d.channels) + " " +
                  std::to_string(d.height) + "x" + std::to_string(d.width) + " H" +
                  std::to_string(d.heads) + " d" + std::to_string(d.head_dim);
  if (!d.bias_uses_scaled_q) s += " unscaled-pos";
  if (spec.qkv_bias) s += " qkv-bias";
  if (d.stride != 1) s += " stride" + std::to_string(d.stride);
  return s;
}
Problem bottleneck_problem(const BottleneckSpec& spec) {
  // The inputs fmap, w_qkv, qkv_bias, rel_h, rel_w: as fp32 values (rounded
  // to bf16 for a bf16 desc) and, for bf16, as bf16 bits.
  struct Buffers {
    std::array<Shared<float>, 5> values;
    std::array<Shared<uint16_t>, 5> bits;
    std::vector<float> out;

    // The block on the inputs in `dtype`, into out.
    posenc_status run(posenc_context* ctx, posenc_bottleneck_desc d, posenc_dtype dtype,
                      bool qkv_bias) {
      d.dtype = dtype;
      const auto in = [&](size_t i) -> const void* {
        if (dtype == POSENC_BF16) return bits[i]->data();
        return values[i]->data();
      };
      const posenc_bottleneck_tensors t{in(0), in(1), qkv_bias ? in(2) : nullptr,
                                        in(3), in(4), out.data()};
      return posenc_bottleneck(ctx, &d, &t, nullptr, 0);
    }
  };
  const posenc_bottleneck_desc& d = spec.desc;
  auto b = std::make_shared<Buffers>();
  const int64_t tokens = d.height * d.width, inner = d.heads * d.head_dim;
  const size_t sizes[5] = {size_t(d.batch * d.channels * tokens), size_t(3 * inner * d.channels),
                           spec.qkv_bias ? size_t(3 * inner) : 0,
                           size_t((2 * d.height - 1) * d.head_dim),
                           size_t((2 * d.width - 1) * d.head_dim)};
  const uint32_t seeds[5] = {30, 31, 34, 32, 33};
  double elements = 0;
  for (size_t i = 0; i < 5; ++i) {
    elements += double(sizes[i]);
    if (d.dtype != POSENC_BF16) {
      b->values[i] = shared_floats(sizes[i], seeds[i]);
    } else if (i == 1) {
      // bf16 weights of a model's scale, fan_in^-1/2: with weights in
      // [-1, 1) the position logits are so large that bf16 GEMMs' rounding
      // of q moves the outputs past bf16's tolerance.
      std::vector<float> w = seeded_floats(sizes[i], seeds[i]);
      for (float& x : w) x /= std::sqrt(float(d.channels));
      b->bits[i] = std::make_shared<const std::vector<uint16_t>>(to_bf16(w));
      b->values[i] = std::make_shared<const std::vector<float>>(from_bf16(*b->bits[i]));
    } else {
      b->values[i] = shared_bf16_values(sizes[i], seeds[i]);
      b->bits[i] = shared_bf16_bits(sizes[i], seeds[i]);
    }
  }
  b->out.assign(size_t(d.batch * inner * (d.height / d.stride) * (d.width / d.stride)), 0.0f);
  const bool qkv_bias = spec.qkv_bias;
  Problem p;
  p.write_bytes = double(b->out.size()) * sizeof(float);
  p.bytes = elements * (d.dtype == POSENC_BF16 ? 2 : 4) + p.write_bytes;
  // The 1x1 qkv projection, then the 2D attention of the map's tokens.
  const double projection = 2.0 * double(d.batch * tokens * d.channels) * double(3 * inner);
  p.flops = projection + flops_of(desc_2d(d.batch, d.heads, d.height, d.width, d.head_dim));
  // bf16 widened to fp32 GEMMs where the attention's GEMMs do not run in bf16.
  p.gemm_type = ops::attention_gemm_dtype(d.dtype);
  p.run = [b, d, qkv_bias](posenc_context* ctx) { return b->run(ctx, d, d.dtype, qkv_bias); };
  p.output = [b] { return b->out; };
  p.reference = [b, d, qkv_bias] {
    const auto in = [&](size_t i) { return b->values[i]->data(); };
    return reference::bottleneck_mhsa(d, in(0), in(1), qkv_bias ? in(2) : nullptr, in(3), in(4));
  };
  if (d.dtype == POSENC_BF16) {
    p.baseline = [b, d, qkv_bias] { b->run(nullptr, d, POSENC_F32, qkv_bias); };
  }
  return p;
}
const Op<BottleneckSpec> kBottleneck{"attention", "bottleneck_mhsa", kF32Tolerance, "",
                                     describe_bottleneck, bottleneck_problem};
const Op<BottleneckSpec> kBottleneckBf16{
    "attention", "bottleneck_mhsa_bf16", kBf16BottleneckTolerance,
    "fused_f32", describe_bottleneck,    bottleneck_problem};
BottleneckSpec bottleneck(int64_t batch, int64_t channels, int64_t height, int64_t width,
                          int64_t heads, int64_t head_dim) {
  BottleneckSpec spec{{}, false};
  posenc_bottleneck_desc_init(&spec.desc, batch, channels, height, width, heads, head_dim);
  return spec;
}
// timm's BottleneckAttn defaults for the first block of a stage: position
// logits from the unscaled q, a qkv bias, stride 2.
BottleneckSpec timm_first_block(BottleneckSpec spec) {
  spec.desc.bias_uses_scaled_q = 0;
  spec.desc.stride = 2;
  spec.qkv_bias = true;
  return spec;
}
BottleneckSpec in_bf16(BottleneckSpec spec) {
  spec.desc.dtype = POSENC_BF16;
  return spec;
}

}  // namespace

std::vector<Case> attention_cases() {
  const std::vector<std::string> timed{"bench", "demo"};
  const posenc_dtype bf16 = POSENC_BF16;
  return {
      kAttention2dF32({"check"}, per_head(desc_2d(1, 4, 14, 14, 64))),
      kAttention1dF32({"check"}, decoding(desc_1d(2, 4, 3, 300, 64), 64, 297)),
      // Several key blocks of 1024, the last one short.
      kAttention1dF32({}, decoding(desc_1d(1, 3, 40, 2200, 16), 300, 2150)),
      kAttention2dBf16({"check"}, per_head(desc_2d(2, 4, 9, 11, 32, bf16))),
      kBottleneck({"check"}, bottleneck(2, 24, 7, 5, 2, 8)),
      kBottleneck({"check"}, timm_first_block(bottleneck(2, 24, 7, 6, 2, 8))),
      kBottleneckBf16({"check"}, in_bf16(bottleneck(2, 24, 5, 7, 2, 8))),
      kAttentionF32({"check"}, absolute_bias(plain(2, 3, 37, 41, 16))),
      // The bias kinds without q, each on a model's options: Swin's window
      // (per-query masks), BEiT's class token, a 1D table, T5's encoder and
      // decoder, ALiBi for a decoder and for an encoder.
      kAttentionFamilyF32({"check"}, with_mask(table_2d(4, 3, 5, 6, 16), 2, 1, true)),
      kAttentionFamilyF32({"check"}, with_class_token(table_2d(2, 3, 4, 5, 16))),
      kAttentionFamilyF32({"check"}, table_1d(3, 45, 16)),
      kAttentionFamilyF32({"check"}, t5(2, 3, 150, 16)),
      kAttentionFamilyF32({"check"}, t5_decoder(t5(1, 3, 150, 16))),
      kAttentionFamilyF32({"check"}, wavlm(2, 3, 130, 16)),
      kAttentionFamilyF32({"check"}, alibi(6, 70, 16)),
      kAttentionFamilyF32({"check"}, bidirectional(alibi(5, 70, 16))),
      // BoTNet26t's last stage (16x16, 4 heads) with 512 channels in and out.
      kBottleneck({"bench"}, bottleneck(1, 512, 16, 16, 4, 128), bottleneck(1, 16, 5, 3, 2, 8)),
      kBottleneck({"bench"}, timm_first_block(bottleneck(1, 512, 16, 16, 4, 128)),
                  timm_first_block(bottleneck(1, 16, 5, 3, 2, 8))),
      kBottleneckBf16({"bench"}, in_bf16(bottleneck(1, 512, 16, 16, 4, 128)),
                      in_bf16(bottleneck(1, 16, 5, 3, 2, 8))),
      kBottleneckBf16({"bench"}, in_bf16(timm_first_block(bottleneck(1, 512, 16, 16, 4, 128))),
                      in_bf16(timm_first_block(bottleneck(1, 16, 5, 3, 2, 8)))),
      // Swin's shifted windows: 6 windows of 7 x 7 folded into the batch, 3
      // masks; a bf16 key-padding mask per head while decoding.
      kAttention2dF32({"check"}, with_mask(per_head(desc_2d(6, 3, 7, 7, 32)), 3, 1, true)),
      kAttention1dF32({"check"}, with_mask(decoding(desc_1d(2, 4, 3, 300, 64), 64, 297), 1, 4,
                                           false, bf16)),
      // A dense fp32 mask against none (issue 15: at most 1.15x), shared by
      // the heads and per head.
      kAttentionF32({"bench"}, plain(1, 8, 2048, 2048, 64), plain(1, 2, 300, 300, 64)),
      kAttentionF32({"bench"}, with_mask(plain(1, 8, 2048, 2048, 64), 1, 1, true),
                    with_mask(plain(1, 2, 300, 300, 64), 1, 1, true)),
      kAttentionF32({"bench"}, with_mask(plain(1, 8, 2048, 2048, 64), 1, 8, true),
                    with_mask(plain(3, 2, 300, 300, 64), 3, 2, true)),
      kAttention2dF32(timed, desc_2d(8, 4, 14, 14, 128), desc_2d(2, 2, 5, 7, 32)),
      kAttention2dBf16(timed, desc_2d(8, 4, 14, 14, 128, bf16), desc_2d(2, 2, 5, 7, 32, bf16)),
      kAttention2dF32(timed, desc_2d(1, 4, 64, 64, 64), desc_2d(1, 2, 11, 9, 64)),
      // SAM's conventions against the rows above (same shapes, posenc's order).
      kAttention2dF32({"bench"}, sam(desc_2d(8, 4, 14, 14, 128)), sam(desc_2d(2, 2, 5, 7, 32))),
      kAttention2dF32({"bench"}, sam(desc_2d(1, 4, 64, 64, 64)), sam(desc_2d(1, 2, 11, 9, 64))),
      kAttention2dF32({"bench"}, sam(desc_2d(1, 4, 14, 14, 64), 64, 64),
                      sam(desc_2d(1, 2, 3, 5, 16), 6, 10)),
      kAttention2dBf16(timed, desc_2d(1, 4, 64, 64, 64, bf16), desc_2d(1, 2, 11, 9, 64, bf16)),
      kAttention1dF32({"bench"}, desc_1d(1, 8, 1024, 1024, 64), desc_1d(1, 2, 300, 300, 64)),
      kAttention1dBf16({"bench"}, desc_1d(1, 8, 1024, 1024, 64, bf16),
                       desc_1d(1, 2, 300, 300, 64, bf16)),
      kAttention1dF32({"bench"}, desc_1d(1, 8, 4096, 4096, 64), desc_1d(1, 1, 1030, 1030, 16)),
      kAttention1dBf16({"bench"}, desc_1d(1, 8, 4096, 4096, 64, bf16),
                       desc_1d(1, 1, 1030, 1030, 16, bf16)),
      // The issue's padded batch: 8 sentences of 50..512 tokens; then the
      // same batch without lengths.
      kPaddedBatch({"bench"}, padded(8, 64, {50, 116, 182, 248, 314, 380, 446, 512}),
                   padded(2, 16, {0, 1, 37, 200, 130})),
      kAttention1dF32({"bench"}, padded(8, 64, std::vector<int32_t>(8, 512)).desc,
                      padded(2, 16, std::vector<int32_t>(5, 200)).desc),
      // The Conformer's relative attention (NeMo's FastConformer-L encoder:
      // 8 heads of 64; 750 frames, a minute of audio at 8x subsampling),
      // against the same per-head tables without pos_bias_v: the query
      // bias's cost. Checked in fp32 and bf16 on odd sizes.
      kAttention1dF32({"bench"}, conformer(desc_1d(1, 8, 750, 750, 64)),
                      conformer(desc_1d(1, 2, 70, 70, 16))),
      kAttention1dF32({"bench"}, per_head(desc_1d(1, 8, 750, 750, 64)),
                      per_head(desc_1d(1, 2, 70, 70, 16))),
      kAttention1dBf16({"bench"}, conformer(desc_1d(1, 8, 750, 750, 64, bf16)),
                       conformer(desc_1d(1, 2, 70, 70, 16, bf16))),
      // A streaming step: 16 new frames against 128 cached ones.
      kAttention1dF32({"bench"}, conformer(newest(desc_1d(1, 8, 16, 144, 64))),
                      conformer(newest(desc_1d(1, 2, 5, 40, 16)))),
      kAttention1dF32({"bench"}, per_head(newest(desc_1d(1, 8, 16, 144, 64))),
                      per_head(newest(desc_1d(1, 2, 5, 40, 16)))),
      kAttention1dF32({"check"}, conformer(desc_1d(3, 2, 77, 77, 16))),
      kAttention1dBf16({"check"}, conformer(desc_1d(2, 3, 41, 41, 24, bf16))),
      // DeBERTa-v3-base's layer (12 heads of 64, 512 tokens: log buckets past
      // 128) against the unfused way of transformers' DebertaV2, and against
      // the same shape's plain attention (the bias's cost: `posenc bench
      // --filter 'T512 d64'`). Checked on odd sizes with buckets and without.
      kAttention1dF32({"bench"}, deberta(desc_1d(1, 12, 512, 512, 64)),
                      deberta(desc_1d(2, 3, 77, 77, 24), 16, 20)),
      kAttention1dBf16({"bench"}, deberta(desc_1d(1, 12, 512, 512, 64, bf16)),
                       deberta(desc_1d(2, 3, 41, 41, 24, bf16), 7, 9)),
      kAttentionF32({"bench"}, plain(1, 12, 512, 512, 64), plain(1, 2, 50, 50, 16)),
      // A batch of sentences (the block pairs' way).
      kAttention1dF32({"bench"}, deberta(desc_1d(8, 12, 128, 128, 64)),
                      deberta(desc_1d(3, 2, 30, 30, 16))),
      kAttentionF32({"bench"}, plain(8, 12, 128, 128, 64), plain(3, 2, 30, 30, 16)),
      // A decode step of BERT's relative_key_query (no buckets, 512
      // positions): each key's logit at its row (the decode kernel), not a
      // GEMM of every key against the window; against the plain step.
      kAttention1dF32({"bench"}, causal(newest(deberta(desc_1d(1, 12, 1, 512, 64), 0, 512))),
                      causal(newest(deberta(desc_1d(2, 3, 2, 90, 16), 0, 40)))),
      kAttentionF32({"bench"}, causal(newest(plain(1, 12, 1, 512, 64))),
                    causal(newest(plain(2, 3, 2, 90, 16)))),
      kAttention1dF32({"check"}, deberta(desc_1d(1, 2, 50, 50, 16), 0, 8)),
      // Grouped kv heads (groups of 3 that a thread count splits), a packed
      // qkv, a KV cache with spare rows.
      kAttention1dF32({"check"}, grouped(decoding(desc_1d(2, 6, 40, 90, 16), 8, 50), 2)),
      kAttentionF32({"check"}, packed(grouped(causal(desc_1d(2, 4, 45, 45, 16)), 2))),
      kAttentionF32({"check"}, kv_cache(grouped(decoding(desc_1d(2, 8, 4, 120, 16), 16, 116), 2),
                                        128)),
      kAttentionBf16({"check"}, packed(desc_2d(1, 4, 5, 7, 16, bf16))),
      kAttentionBf16({"check"}, kv_cache(grouped(plain(2, 8, 3, 70, 32, bf16), 1), 80)),
      // A packed qkv against the dense layout (the baseline).
      kAttentionF32({"bench"}, plain(1, 32, 2048, 2048, 128), plain(1, 4, 70, 70, 16)),
      kAttentionF32({"bench"}, packed(plain(1, 32, 2048, 2048, 128)),
                    packed(plain(1, 4, 70, 70, 16))),
      kAttentionBf16({"bench"}, packed(plain(1, 32, 2048, 2048, 128, bf16)),
                     packed(plain(1, 4, 70, 70, 16, bf16))),
      // Causal, whose GEMMs over fewer keys read the packed values one
      // column block at a time (matmul_on_packed_b).
      kAttentionF32({"bench"}, packed(causal(plain(1, 32, 2048, 2048, 128))),
                    packed(causal(plain(1, 2, 256, 256, 128)))),
      kAttentionBf16({"bench"}, packed(causal(plain(1, 32, 2048, 2048, 128, bf16))),
                     packed(causal(plain(1, 2, 256, 256, 128, bf16)))),
      // A sliding window (Mistral's 4096 of 16384 at an eighth of its heads):
      // the key blocks before each query block's window are skipped, so the
      // time follows the pairs in the window, against the full causal row.
      kAttentionF32({"bench"}, grouped(causal(plain(1, 4, 16384, 16384, 128)), 1),
                    grouped(causal(plain(1, 4, 300, 300, 16)), 2)),
      kAttentionF32({"bench"}, grouped(sliding(plain(1, 4, 16384, 16384, 128), 4096), 1),
                    grouped(sliding(plain(1, 4, 300, 300, 16), 70), 2)),
      // ModernBERT-base's local layer (a window of 128, W = 65 on each side)
      // over 4096 tokens, against its global one (the families' plain row).
      kAttentionF32({"bench"}, local(plain(1, 12, 4096, 4096, 64), 65),
                    local(plain(1, 3, 300, 300, 16), 20)),
      // Gemma-2-2B's global layer (8 heads on 4, d256) with and without its
      // soft cap of 50: a tanh per score.
      kAttentionBf16({"bench"}, grouped(causal(plain(1, 8, 4096, 4096, 256, bf16)), 4),
                     grouped(causal(plain(1, 4, 300, 300, 16, bf16)), 2)),
      kAttentionBf16({"bench"},
                     softcapped(grouped(causal(plain(1, 8, 4096, 4096, 256, bf16)), 4), 50.0f),
                     softcapped(grouped(causal(plain(1, 4, 300, 300, 16, bf16)), 2), 0.5f)),
      // gpt-oss-20b's sliding-window layer (64 heads on 8, d64, window 128)
      // with and without its sinks: a sink costs an exp per row.
      kAttentionBf16({"bench"}, grouped(sliding(plain(1, 64, 4096, 4096, 64, bf16), 128), 8),
                     grouped(sliding(plain(1, 8, 300, 300, 16, bf16), 20), 2)),
      kAttentionBf16({"bench"},
                     with_sinks(grouped(sliding(plain(1, 64, 4096, 4096, 64, bf16), 128), 8)),
                     with_sinks(grouped(sliding(plain(1, 8, 300, 300, 16, bf16), 20), 2))),
      // Issue 18's target shapes not covered above (the 2D relative B1 H4
      // 64x64 d64 rows are; fp32 causal is ALiBi's plain row): plain bf16,
      // causal bf16, SAM ViT-B's global attention, the BoTNet block of
      // BoTNet's 14x14 stage with batch 8.
      kAttentionBf16({"bench"}, plain(1, 32, 2048, 2048, 128, bf16),
                     plain(1, 4, 70, 70, 16, bf16)),
      kAttentionBf16({"bench"}, causal(plain(1, 32, 2048, 2048, 128, bf16)),
                     causal(plain(1, 4, 70, 70, 16, bf16))),
      kAttention2dF32({"bench"}, sam(desc_2d(1, 12, 64, 64, 64)), sam(desc_2d(1, 3, 11, 9, 64))),
      kAttention2dBf16({"bench"}, sam(desc_2d(1, 12, 64, 64, 64, bf16)),
                       sam(desc_2d(1, 3, 11, 9, 64, bf16))),
      kBottleneck({"bench"}, bottleneck(8, 512, 14, 14, 4, 128), bottleneck(2, 16, 5, 3, 2, 8)),
      kBottleneckBf16({"bench"}, in_bf16(bottleneck(8, 512, 14, 14, 4, 128)),
                      in_bf16(bottleneck(2, 16, 5, 3, 2, 8))),
      // The bias kinds without q (issue 16: at most 1.15x the plain row
      // after each, at least 3x the unfused way): a 64x64 window (BEiT-like
      // sizes), a 1D table over 4096 tokens, Swin's shifted 7x7 windows of a
      // 56x56 map (64 windows folded into the batch, one mask per window:
      // mask_batch 64; the cases' random mask values, timed as the shift
      // mask), BEiT's 14x14 map and class token for one image, T5's
      // encoder, a causal ALiBi decoder.
      kAttentionFamilyF32({"bench"}, table_2d(1, 12, 64, 64, 64), table_2d(1, 2, 5, 7, 16)),
      kAttentionFamilyPlainF32({"bench"}, without_bias(table_2d(1, 12, 64, 64, 64)),
                               without_bias(table_2d(1, 2, 5, 7, 16))),
      kAttentionFamilyF32({"bench"}, with_class_token(table_2d(1, 12, 14, 14, 64)),
                          with_class_token(table_2d(1, 2, 3, 4, 16))),
      kAttentionFamilyPlainF32({"bench"},
                               without_bias(with_class_token(table_2d(1, 12, 14, 14, 64))),
                               without_bias(with_class_token(table_2d(1, 2, 3, 4, 16)))),
      kAttentionFamilyF32({"bench"}, table_1d(12, 4096, 64), table_1d(2, 70, 16)),
      kAttentionFamilyPlainF32({"bench"}, without_bias(table_1d(12, 4096, 64)),
                               without_bias(table_1d(2, 70, 16))),
      kAttentionFamilyF32({"bench"}, with_mask(table_2d(64, 4, 7, 7, 32), 64, 1, true),
                          with_mask(table_2d(4, 2, 7, 7, 16), 2, 1, true)),
      kAttentionFamilyPlainF32({"bench"},
                               without_bias(with_mask(table_2d(64, 4, 7, 7, 32), 64, 1, true)),
                               without_bias(with_mask(table_2d(4, 2, 7, 7, 16), 2, 1, true))),
      kAttentionFamilyF32({"bench"}, t5(8, 12, 512, 64), t5(2, 2, 70, 16)),
      kAttentionFamilyPlainF32({"bench"}, without_bias(t5(8, 12, 512, 64)),
                               without_bias(t5(2, 2, 70, 16))),
      // WavLM-base's layer over 10 s of audio (500 frames), gated, ungated
      // and without a bias: the gate's cost.
      kAttentionFamilyF32({"bench"}, wavlm(1, 12, 500, 64), wavlm(2, 2, 60, 16)),
      kAttentionFamilyF32({"bench"}, ungated(wavlm(1, 12, 500, 64)),
                          ungated(wavlm(2, 2, 60, 16))),
      kAttentionFamilyPlainF32({"bench"}, without_bias(wavlm(1, 12, 500, 64)),
                               without_bias(wavlm(2, 2, 60, 16))),
      kAttentionFamilyF32({"bench"}, alibi(32, 2048, 128), alibi(3, 100, 16)),
      kAttentionFamilyPlainF32({"bench"}, without_bias(alibi(32, 2048, 128)),
                               without_bias(alibi(3, 100, 16))),
      // A GQA decode step: bound by reading k and v ("of memcpy").
      kAttentionF32({"bench"}, grouped(plain(1, 32, 1, 8192, 128), 8),
                    grouped(plain(1, 8, 1, 300, 16), 2)),
      kAttentionBf16({"bench"}, grouped(plain(1, 32, 1, 8192, 128, bf16), 8),
                     grouped(plain(1, 8, 1, 300, 16, bf16), 2)),
      // A short cache, the decode row of bench/torch_attention.py: a kv
      // head's four query heads stacked a task, its 512 keys two ranges.
      kAttentionF32({"bench"}, grouped(plain(1, 32, 1, 512, 128), 8),
                    grouped(plain(1, 8, 1, 200, 16), 2)),
      kAttentionBf16({"bench"}, grouped(plain(1, 32, 1, 512, 128, bf16), 8),
                     grouped(plain(1, 8, 1, 200, 16, bf16), 2)),
      // Groups of 8 (Llama 2 70B's 64 heads on 8): 4 query heads stacked a
      // task (the decode kernels' most rows), each kv head read twice.
      kAttentionF32({"bench"}, grouped(plain(1, 64, 1, 4096, 128), 8),
                    grouped(plain(1, 8, 1, 600, 16), 1)),
      kAttentionBf16({"bench"}, grouped(plain(1, 64, 1, 4096, 128, bf16), 8),
                     grouped(plain(1, 8, 1, 600, 16, bf16), 1)),
      // Decode steps under a sliding window, the key ranges over the
      // window's keys (not the cache's): gpt-oss-20b's window of 128 with
      // its sinks, Mistral's 4096 of a 32768-key cache.
      kAttentionBf16(
          {"bench"}, newest(with_sinks(grouped(sliding(plain(1, 64, 1, 4096, 64, bf16), 128), 8))),
          newest(with_sinks(grouped(sliding(plain(1, 8, 1, 600, 16, bf16), 20), 2)))),
      kAttentionF32({"bench"}, newest(grouped(sliding(plain(1, 32, 1, 32768, 128), 4096), 8)),
                    newest(grouped(sliding(plain(1, 8, 1, 3000, 16), 700), 2))),
      kAttentionF32({"bench"}, grouped(plain(1, 32, 1, 65536, 128), 8),
                    grouped(plain(1, 8, 4, 3000, 16), 2)),
      kAttentionBf16({"bench"}, grouped(plain(1, 32, 1, 65536, 128, bf16), 8),
                     grouped(plain(1, 8, 4, 3000, 16, bf16), 2)),
      // Eight queries against 8192 cached keys (drafted tokens checked, or a
      // prompt's chunk) under multi-query attention: eight query heads
      // stacked a task (64 rows), the keys split into 16 ranges of 512, each
      // range of the one kv head read by four tasks.
      kAttentionF32({"bench"}, grouped(plain(1, 32, 8, 8192, 128), 1),
                    grouped(plain(1, 16, 8, 3000, 16), 1)),
      kAttentionBf16({"bench"}, grouped(plain(1, 32, 8, 8192, 128, bf16), 1),
                     grouped(plain(1, 16, 8, 3000, 16, bf16), 1)),
      // Four drafted tokens of Falcon-40B's 128 query heads on 8 kv heads,
      // against a token-major cache: 16 query heads stacked a task (64
      // rows), the keys split into 8 ranges, each read by one task.
      kAttentionF32({"bench"}, token_major_kv_cache(grouped(plain(1, 128, 4, 8192, 64), 8), 8448),
                    token_major_kv_cache(grouped(plain(1, 32, 4, 3000, 16), 2), 3100)),
      kAttentionBf16({"bench"},
                     token_major_kv_cache(grouped(plain(1, 128, 4, 8192, 64, bf16), 8), 8448),
                     token_major_kv_cache(grouped(plain(1, 32, 4, 3000, 16, bf16), 2), 3100)),
      // Decoding: the keys of each head split into ranges (split_keys.hpp).
      kAttention1dF32({"check"}, decoding(desc_1d(1, 2, 4, 4097, 32), 64, 4093)),
      kAttention1dBf16({"check"}, decoding(desc_1d(1, 2, 4, 4097, 32, bf16), 64, 4093)),
      kAttention1dF32({"bench"}, decode_step(desc_1d(1, 8, 1, 8192, 128)),
                      decode_step(desc_1d(1, 2, 1, 2500, 16))),
      kAttention1dF32({"bench"}, decode_step(desc_1d(1, 8, 1, 65536, 128)),
                      decode_step(desc_1d(1, 1, 3, 5000, 16))),
      // One head: the split alone gives the threads work.
      kAttention1dF32({"bench"}, decode_step(desc_1d(1, 1, 1, 65536, 128)),
                      decode_step(desc_1d(1, 1, 1, 3000, 16))),
      kAttention1dBf16({"bench"}, decode_step(desc_1d(1, 8, 1, 8192, 128, bf16)),
                       decode_step(desc_1d(1, 2, 1, 2500, 16, bf16))),
      kAttention1dBf16({"bench"}, decode_step(desc_1d(1, 8, 1, 65536, 128, bf16)),
                       decode_step(desc_1d(1, 1, 3, 5000, 16, bf16))),
  };
}

}  // namespace posenc::cases
