// Fused attention with relative positions (fp32 and bf16) on the issue's
// shapes. fp32 is set against the unfused way on the same oneDNN
// (attention_unfused.hpp), bf16 against the fused fp32 call.
//
// FLOPs counted: 4*B*H*N*N*d for q k^T and a v, plus the position logits at
// the size the seeds compute them (1D: q R^T with R of 2N-1 rows,
// 2*B*H*N*(2N-1)*d; 2D: 2*B*H*N*(2X-1 + 2Y-1)*d).
#include <memory>
#include <string>
#include <vector>

#include "attention_unfused.hpp"
#include "bench_case.hpp"

namespace posenc::bench {
namespace {

struct Shape {
  const char* name;
  int64_t batch, heads, height, width, head_dim;  // 1D: height = T, width = 0
};

const Shape kShapes[] = {
    {"2D B8 H4 14x14 d128", 8, 4, 14, 14, 128},
    {"2D B1 H4 64x64 d64", 1, 4, 64, 64, 64},
    {"1D B1 H8 T1024 d64", 1, 8, 1024, 0, 64},
    {"1D B1 H8 T4096 d64", 1, 8, 4096, 0, 64},
};

posenc_attention_desc desc_of(const Shape& s, posenc_dtype dtype) {
  const int64_t n = s.width > 0 ? s.height * s.width : s.height;
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, s.batch, s.heads, n, n, s.head_dim);
  d.dtype = dtype;
  if (s.width > 0) {
    d.bias = POSENC_BIAS_RELATIVE_2D;
    d.map_height = s.height;
    d.map_width = s.width;
  } else {
    d.bias = POSENC_BIAS_RELATIVE_1D;
  }
  return d;
}

int64_t table_rows(const posenc_attention_desc& d) {
  return d.bias == POSENC_BIAS_RELATIVE_2D ? 2 * d.map_height - 1 + 2 * d.map_width - 1
                                           : 2 * d.q_len - 1;
}

double flops_of(const posenc_attention_desc& d) {
  const double bh = double(d.batch * d.heads), n = double(d.q_len), dh = double(d.head_dim);
  return bh * (4.0 * n * n * dh + 2.0 * n * double(table_rows(d)) * dh);
}

// Inputs of one shape in fp32 and bf16 (values in [-1, 1)), the output and
// a preallocated workspace per dtype.
class AttentionBuffers {
 public:
  explicit AttentionBuffers(const Shape& shape) : f32_desc_(desc_of(shape, POSENC_F32)) {
    const posenc_attention_desc& d = f32_desc_;
    const size_t qkv = size_t(d.batch * d.heads * d.q_len * d.head_dim);
    const size_t dh = size_t(d.head_dim);
    std::vector<size_t> sizes{qkv, qkv, qkv};
    if (d.bias == POSENC_BIAS_RELATIVE_2D) {
      sizes.push_back(size_t(2 * d.map_height - 1) * dh);
      sizes.push_back(size_t(2 * d.map_width - 1) * dh);
    } else {
      sizes.push_back(size_t(2 * d.q_len - 1) * dh);
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      f32_.emplace_back(sizes[i]);
      bf16_.emplace_back(sizes[i]);
      for (size_t j = 0; j < sizes[i]; ++j) {
        f32_[i][j] = float((j * 2654435761u + i * 97u) % 2001u) / 1000.0f - 1.0f;
        bf16_[i][j] = posenc_f32_to_bf16(f32_[i][j]);
      }
    }
    out_.resize(qkv);
  }

  posenc_attention_desc desc(posenc_dtype dtype) const {
    posenc_attention_desc d = f32_desc_;
    d.dtype = dtype;
    return d;
  }

  posenc_attention_tensors tensors(posenc_dtype dtype) {
    auto pass = [&](size_t i) -> const void* {
      if (dtype == POSENC_BF16) return bf16_[i].data();
      return f32_[i].data();
    };
    posenc_attention_tensors t{pass(0), pass(1), pass(2), nullptr,
                               nullptr, nullptr, nullptr, out_.data()};
    if (f32_.size() == 5) {
      t.table_h = pass(3);
      t.table_w = pass(4);
    } else {
      t.table = pass(3);
    }
    return t;
  }

  // The fused call with a workspace sized for this context on first use.
  void run(posenc_context* context, posenc_dtype dtype) {
    const posenc_attention_desc d = desc(dtype);
    size_t bytes = 0;
    posenc_attention_workspace_size(context, &d, &bytes);
    if (workspace_.size() < bytes) workspace_.resize(bytes);
    const posenc_attention_tensors t = tensors(dtype);
    posenc_attention(context, &d, &t, workspace_.data(), bytes);
  }

  void run_unfused() {
    if (!unfused_) unfused_ = std::make_unique<UnfusedAttention>(f32_desc_);
    unfused_->run(nullptr, tensors(POSENC_F32));
  }

  double bytes(posenc_dtype dtype) const {
    double elements = 0;
    for (const auto& x : f32_) elements += double(x.size());
    return elements * (dtype == POSENC_BF16 ? 2 : 4) + double(out_.size()) * sizeof(float);
  }
  double out_bytes() const { return double(out_.size()) * sizeof(float); }

 private:
  posenc_attention_desc f32_desc_;
  std::vector<std::vector<float>> f32_;
  std::vector<std::vector<uint16_t>> bf16_;
  std::vector<float> out_;
  std::vector<unsigned char> workspace_;
  std::unique_ptr<UnfusedAttention> unfused_;  // created when first timed
};

}  // namespace

CaseList attention_cases() {
  CaseList cases;
  for (const Shape& shape : kShapes) {
    auto b = std::make_shared<AttentionBuffers>(shape);
    const double flops = flops_of(b->desc(POSENC_F32));
    const std::string op = std::string("attention_") + (shape.width > 0 ? "2d" : "1d");
    cases.push_back({op + "_f32", shape.name, b->bytes(POSENC_F32), b->out_bytes(), flops,
                     [b](posenc_context* ctx) { b->run(ctx, POSENC_F32); }, "unfused",
                     [b] { b->run_unfused(); }});
    cases.push_back({op + "_bf16", shape.name, b->bytes(POSENC_BF16), b->out_bytes(), flops,
                     [b](posenc_context* ctx) { b->run(ctx, POSENC_BF16); }, "fused_f32",
                     [b] { b->run(nullptr, POSENC_F32); }});
  }
  return cases;
}

}  // namespace posenc::bench
