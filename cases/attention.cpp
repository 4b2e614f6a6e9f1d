// Fused attention with relative positions (fp32 and bf16) and the BoTNet
// bottleneck block. fp32 is timed against the unfused way on the same oneDNN
// (attention_unfused.hpp), bf16 against the fused fp32 call.
//
// FLOPs counted: 4*B*H*Tq*Tk*d for q k^T and a v, plus the position logits
// at the size the unfused way computes them (1D: q R^T with R of Tq+Tk-1 rows,
// 2*B*H*Tq*(Tq+Tk-1)*d; 2D: 2*B*H*N*(2X-1 + 2Y-1)*d).
#include <memory>
#include <string>
#include <vector>

#include "cases/attention_unfused.hpp"
#include "cases/case.hpp"
#include "reference/attention.hpp"
#include "cases/values.hpp"

namespace posenc::cases {
namespace {

// Outputs are weighted means of values in [-1, 1): fp32 rounding stays far
// below 1e-4; bf16 probabilities and products within 2e-2.
constexpr double kF32Tolerance = 1e-4, kBf16Tolerance = 2e-2;

bool is_2d(const posenc_attention_desc& d) { return d.bias == POSENC_BIAS_RELATIVE_2D; }

std::string describe(const posenc_attention_desc& d) {
  std::string s = std::string(is_2d(d) ? "2D" : "1D") + " B" + std::to_string(d.batch) + " H" +
                  std::to_string(d.heads) + " ";
  if (is_2d(d)) {
    s += std::to_string(d.map_height) + "x" + std::to_string(d.map_width);
  } else if (d.q_len == d.kv_len) {
    s += "T" + std::to_string(d.q_len);
  } else {
    s += "Tq" + std::to_string(d.q_len) + " Tk" + std::to_string(d.kv_len);
  }
  s += " d" + std::to_string(d.head_dim);
  if (d.layout == POSENC_LAYOUT_BTHD) s += " BTHD";
  if (d.tables_per_head) s += " per-head";
  if (d.query_offset != 0) s += " @" + std::to_string(d.query_offset);
  if (d.max_distance > 0) s += " K" + std::to_string(d.max_distance);
  if (d.causal) s += " causal";
  if (d.relative_values) s += " values";
  return s;
}

// Rows of the 1D table (and of the value table), as posenc/attention.h says.
int64_t table_rows(const posenc_attention_desc& d) {
  return d.max_distance > 0 ? 2 * d.max_distance + 1 : d.q_len + d.kv_len - 1;
}

double flops_of(const posenc_attention_desc& d) {
  const double bh = double(d.batch * d.heads), dh = double(d.head_dim);
  const double position_rows = is_2d(d) ? double(2 * d.map_height - 1 + 2 * d.map_width - 1)
                                        : double(table_rows(d));
  return bh * double(d.q_len) * dh * (4.0 * double(d.kv_len) + 2.0 * position_rows);
}

// The unfused baseline covers the plain setting only (BHTD fp32, shared tables,
// no mask, unclipped 1D or 2D).
bool unfused_applies(const posenc_attention_desc& d) {
  const bool plain_1d = d.bias == POSENC_BIAS_RELATIVE_1D && d.max_distance == 0 &&
                        d.q_len == d.kv_len && d.query_offset == 0;
  return d.dtype == POSENC_F32 && d.layout == POSENC_LAYOUT_BHTD && !d.tables_per_head &&
         !d.causal && !d.relative_values && (plain_1d || is_2d(d));
}

// Inputs q, k, v, then the tables the desc uses (R, or Rh and Rw; RV), as
// fp32 values (rounded to bf16 for bf16 descs) and as bf16 bits.
class AttentionBuffers {
 public:
  explicit AttentionBuffers(const posenc_attention_desc& d) : desc_(d) {
    const size_t q = size_t(d.batch * d.heads * d.q_len * d.head_dim);
    const size_t kv = size_t(d.batch * d.heads * d.kv_len * d.head_dim);
    const size_t rows = size_t(d.tables_per_head ? d.heads : 1) * size_t(d.head_dim);
    std::vector<size_t> sizes{q, kv, kv};
    if (is_2d(d)) {
      sizes.push_back(size_t(2 * d.map_height - 1) * rows);
      sizes.push_back(size_t(2 * d.map_width - 1) * rows);
    } else {
      sizes.push_back(size_t(table_rows(d)) * rows);
    }
    if (d.relative_values) sizes.push_back(size_t(table_rows(d)) * rows);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uint32_t seed = uint32_t(20 + i);
      if (d.dtype == POSENC_BF16) {
        f32_.push_back(shared_bf16_values(sizes[i], seed));
        bf16_.push_back(shared_bf16_bits(sizes[i], seed));
      } else {
        f32_.push_back(shared_floats(sizes[i], seed));
      }
    }
    out_.resize(q);
  }

  const posenc_attention_desc& desc() const { return desc_; }

  // The fused call in `dtype` with a workspace sized on first use.
  posenc_status run(posenc_context* context, posenc_dtype dtype) {
    posenc_attention_desc d = desc_;
    d.dtype = dtype;
    size_t bytes = 0;
    const posenc_status status = posenc_attention_workspace_size(context, &d, &bytes);
    if (status != POSENC_OK) return status;
    if (workspace_.size() < bytes) workspace_.resize(bytes);
    const posenc_attention_tensors t = tensors(dtype);
    return posenc_attention(context, &d, &t, workspace_.data(), bytes);
  }

  void run_unfused() {
    if (!unfused_) unfused_ = std::make_unique<UnfusedAttention>(desc_);
    unfused_->run(nullptr, tensors(POSENC_F32));
  }

  std::vector<double> reference() {
    const posenc_attention_tensors t = tensors(POSENC_F32);
    const auto f = [](const void* p) { return static_cast<const float*>(p); };
    const reference::AttentionInputs in{f(t.q),       f(t.k),       f(t.v),          f(t.table),
                                        f(t.table_h), f(t.table_w), f(t.value_table)};
    return reference::attention(desc_, in);
  }

  const std::vector<float>& out() const { return out_; }

  double bytes() const {
    double elements = 0;
    for (const auto& x : f32_) elements += double(x->size());
    return elements * (desc_.dtype == POSENC_BF16 ? 2 : 4) + out_bytes();
  }
  double out_bytes() const { return double(out_.size()) * sizeof(float); }

 private:
  posenc_attention_tensors tensors(posenc_dtype dtype) {
    const auto pass = [&](size_t i) -> const void* {
      if (dtype == POSENC_BF16) return bf16_[i]->data();
      return f32_[i]->data();
    };
    posenc_attention_tensors t{pass(0), pass(1), pass(2), nullptr,
                               nullptr, nullptr, nullptr, out_.data(), nullptr, nullptr, nullptr, nullptr};
    size_t next = 3;
    if (is_2d(desc_)) {
      t.table_h = pass(next++);
      t.table_w = pass(next++);
    } else {
      t.table = pass(next++);
    }
    if (desc_.relative_values) t.value_table = pass(next);
    return t;
  }

  posenc_attention_desc desc_;
  std::vector<Shared<float>> f32_;
  std::vector<Shared<uint16_t>> bf16_;
  std::vector<float> out_;
  std::vector<unsigned char> workspace_;
  std::unique_ptr<UnfusedAttention> unfused_;  // created when first timed
};

Problem attention_problem(const posenc_attention_desc& d) {
  auto b = std::make_shared<AttentionBuffers>(d);
  Problem p;
  p.bytes = b->bytes();
  p.write_bytes = b->out_bytes();
  p.flops = flops_of(d);
  p.run = [b](posenc_context* ctx) { return b->run(ctx, b->desc().dtype); };
  p.output = [b] { return b->out(); };
  p.reference = [b] { return b->reference(); };
  if (d.dtype == POSENC_BF16) {
    p.baseline = [b] { b->run(nullptr, POSENC_F32); };
  } else if (unfused_applies(d)) {
    p.baseline = [b] { b->run_unfused(); };
  }
  return p;
}

const Op<posenc_attention_desc> kAttention1dF32{
    "attention", "attention_1d_f32", kF32Tolerance, "unfused", describe, attention_problem};
const Op<posenc_attention_desc> kAttention1dBf16{
    "attention", "attention_1d_bf16", kBf16Tolerance, "fused_f32", describe, attention_problem};
const Op<posenc_attention_desc> kAttention2dF32{
    "attention", "attention_2d_f32", kF32Tolerance, "unfused", describe, attention_problem};
const Op<posenc_attention_desc> kAttention2dBf16{
    "attention", "attention_2d_bf16", kBf16Tolerance, "fused_f32", describe, attention_problem};

// Descs: 1D relative over T tokens, 2D relative over a map; options after.
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

// --- bottleneck_mhsa: the BoTNet block on an NCHW map.
std::string describe_bottleneck(const posenc_bottleneck_desc& d) {
  return "B" + std::to_string(d.batch) + " C" + std::to_string(d.channels) + " " +
         std::to_string(d.height) + "x" + std::to_string(d.width) + " H" +
         std::to_string(d.heads) + " d" + std::to_string(d.head_dim);
}
Problem bottleneck_problem(const posenc_bottleneck_desc& d) {
  struct Buffers {
    Shared<float> fmap, w, rel_h, rel_w;
    std::vector<float> out;
  };
  auto b = std::make_shared<Buffers>();
  const int64_t tokens = d.height * d.width;
  b->fmap = shared_floats(size_t(d.batch * d.channels * tokens), 30);
  b->w = shared_floats(size_t(3 * d.heads * d.head_dim * d.channels), 31);
  b->rel_h = shared_floats(size_t((2 * d.height - 1) * d.head_dim), 32);
  b->rel_w = shared_floats(size_t((2 * d.width - 1) * d.head_dim), 33);
  b->out.assign(size_t(d.batch * d.heads * d.head_dim * tokens), 0.0f);
  Problem p;
  p.write_bytes = double(b->out.size()) * sizeof(float);
  p.bytes = double(b->fmap->size() + b->w->size() + b->rel_h->size() + b->rel_w->size()) *
                sizeof(float) + p.write_bytes;
  p.run = [b, d](posenc_context* ctx) {
    return posenc_bottleneck_mhsa(ctx, &d, b->fmap->data(), b->w->data(), b->rel_h->data(),
                                  b->rel_w->data(), b->out.data(), nullptr, 0);
  };
  p.output = [b] { return b->out; };
  p.reference = [b, d] {
    return reference::bottleneck_mhsa(d, b->fmap->data(), b->w->data(), b->rel_h->data(),
                                      b->rel_w->data());
  };
  return p;
}
const Op<posenc_bottleneck_desc> kBottleneck{"attention", "bottleneck_mhsa", kF32Tolerance, "",
                                             describe_bottleneck, bottleneck_problem};
posenc_bottleneck_desc bottleneck(int64_t batch, int64_t channels, int64_t height, int64_t width,
                                  int64_t heads, int64_t head_dim) {
  posenc_bottleneck_desc d;
  posenc_bottleneck_desc_init(&d, batch, channels, height, width, heads, head_dim);
  return d;
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
      kAttention2dF32(timed, desc_2d(8, 4, 14, 14, 128), desc_2d(2, 2, 5, 7, 32)),
      kAttention2dBf16(timed, desc_2d(8, 4, 14, 14, 128, bf16), desc_2d(2, 2, 5, 7, 32, bf16)),
      kAttention2dF32(timed, desc_2d(1, 4, 64, 64, 64), desc_2d(1, 2, 11, 9, 64)),
      kAttention2dBf16(timed, desc_2d(1, 4, 64, 64, 64, bf16), desc_2d(1, 2, 11, 9, 64, bf16)),
      kAttention1dF32({"bench"}, desc_1d(1, 8, 1024, 1024, 64), desc_1d(1, 2, 300, 300, 64)),
      kAttention1dBf16({"bench"}, desc_1d(1, 8, 1024, 1024, 64, bf16),
                       desc_1d(1, 2, 300, 300, 64, bf16)),
      kAttention1dF32({"bench"}, desc_1d(1, 8, 4096, 4096, 64), desc_1d(1, 1, 1030, 1030, 16)),
      kAttention1dBf16({"bench"}, desc_1d(1, 8, 4096, 4096, 64, bf16),
                       desc_1d(1, 1, 1030, 1030, 16, bf16)),
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
