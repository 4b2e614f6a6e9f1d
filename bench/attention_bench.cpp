// Fused attention with relative positions: GFLOP/s on each ISA path, as a
// fraction of the oneDNN fp32 GEMM rate measured in the same run (x_gemm),
// the speedup over the unfused way on the same oneDNN (x_unfused, fp32),
// bf16 against fp32 fused (x_fp32), and the workspace in MiB.
//
// FLOPs counted: 4*B*H*N*N*d for q k^T and a v, plus the position logits
// at their useful size (1D: 2*B*H*N*(2N-1)*d; 2D: 2*B*H*N*(2X-1+2Y-1)*d).
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "attention_unfused.hpp"
#include "bench_families.hpp"
#include "bench_support.hpp"
#include "posenc/posenc.hpp"

namespace posenc::bench {
namespace {

struct Shape {
  const char* name;
  int64_t batch, heads, height, width, head_dim;  // 1D: height = T, width = 0
};

const Shape kShapes[] = {
    {"2d/B8xH4x14x14xd128", 8, 4, 14, 14, 128},
    {"2d/B1xH4x64x64xd64", 1, 4, 64, 64, 64},
    {"1d/B1xH8xT1024xd64", 1, 8, 1024, 0, 64},
    {"1d/B1xH8xT4096xd64", 1, 8, 4096, 0, 64},
};

posenc_attention_desc desc_of(const Shape& s) {
  const int64_t n = s.width > 0 ? s.height * s.width : s.height;
  posenc_attention_desc d = attention_desc(s.batch, s.heads, n, n, s.head_dim);
  if (s.width > 0) {
    d.bias = POSENC_BIAS_RELATIVE_2D;
    d.map_height = s.height;
    d.map_width = s.width;
  } else {
    d.bias = POSENC_BIAS_RELATIVE_1D;
  }
  return d;
}

double flops_of(const posenc_attention_desc& d) {
  const double bh = double(d.batch * d.heads), n = double(d.q_len), dh = double(d.head_dim);
  const double table_rows = d.bias == POSENC_BIAS_RELATIVE_2D
                                ? double(2 * d.map_height - 1 + 2 * d.map_width - 1)
                                : double(2 * d.q_len - 1);
  return bh * (4.0 * n * n * dh + 2.0 * n * table_rows * dh);
}

// Inputs for a desc in its dtype (values in [-1, 1)).
struct Inputs {
  std::vector<float> f32[5];
  std::vector<uint16_t> bf16[5];
  posenc_attention_tensors tensors(const posenc_attention_desc& d, void* out) {
    auto pass = [&](int i) -> const void* {
      if (f32[i].empty()) return nullptr;
      return d.dtype == POSENC_BF16 ? static_cast<const void*>(bf16[i].data())
                                    : static_cast<const void*>(f32[i].data());
    };
    posenc_attention_tensors t{pass(0), pass(1), pass(2), nullptr, nullptr, nullptr, nullptr, out};
    if (d.bias == POSENC_BIAS_RELATIVE_2D) {
      t.table_h = pass(3);
      t.table_w = pass(4);
    } else {
      t.table = pass(3);
    }
    return t;
  }
};

Inputs make_inputs(const posenc_attention_desc& d) {
  const size_t qkv = size_t(d.batch * d.heads * d.q_len * d.head_dim);
  std::vector<size_t> sizes{qkv, qkv, qkv};
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    sizes.push_back(size_t((2 * d.map_height - 1) * d.head_dim));
    sizes.push_back(size_t((2 * d.map_width - 1) * d.head_dim));
  } else {
    sizes.push_back(size_t((2 * d.q_len - 1) * d.head_dim));
  }
  Inputs in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    in.f32[i].resize(sizes[i]);
    in.bf16[i].resize(sizes[i]);
    for (size_t j = 0; j < sizes[i]; ++j) {
      in.f32[i][j] = float((j * 2654435761u + i * 97u) % 2001u) / 1000.0f - 1.0f;
      in.bf16[i][j] = posenc_f32_to_bf16(in.f32[i][j]);
    }
  }
  return in;
}

// Seconds of one run of fn, after a warm-up run.
template <class Fn>
double seconds_of(const Fn& fn) {
  fn();
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A call of posenc_attention with its inputs and a preallocated workspace.
class FusedCall {
 public:
  FusedCall(posenc_context* context, const posenc_attention_desc& desc, Inputs& inputs)
      : context_(context), desc_(desc),
        out_(size_t(desc.batch * desc.heads * desc.q_len * desc.head_dim)),
        tensors_(inputs.tensors(desc, out_.data())) {
    posenc_attention_workspace_size(context, &desc_, &bytes_);
    workspace_.resize(bytes_);
  }
  void operator()() const {
    posenc_attention(context_, &desc_, &tensors_, workspace_.data(), bytes_);
  }
  const posenc_attention_tensors& tensors() const { return tensors_; }
  size_t workspace_bytes() const { return bytes_; }

 private:
  posenc_context* context_;
  posenc_attention_desc desc_;
  std::vector<float> out_;
  posenc_attention_tensors tensors_;
  size_t bytes_ = 0;
  mutable std::vector<unsigned char> workspace_;
};

// Seconds of a reference computation, measured once per (key, ISA) for the
// whole run (Google Benchmark calls a benchmark several times).
template <class Fn>
double once(const std::string& key, const Fn& fn) {
  static std::map<std::string, double> seconds;
  auto it = seconds.find(key);
  if (it == seconds.end()) it = seconds.emplace(key, fn()).first;
  return it->second;
}

void fused(benchmark::State& state, posenc_context* context, const Shape& shape,
           posenc_dtype dtype) {
  posenc_attention_desc d = desc_of(shape);
  d.dtype = dtype;
  Inputs in = make_inputs(d);
  const FusedCall call(context, d, in);
  const double seconds = timed_loop(state, call);
  const std::string key = std::string(shape.name) + "/" + posenc_isa_name(posenc_context_isa(context));
  const double flops = flops_of(d);
  state.counters["gflops"] = flops / seconds * 1e-9;
  state.counters["x_gemm"] = flops / seconds * 1e-9 / machine_figures().gemm_gflops;
  state.counters["workspace_mib"] = double(call.workspace_bytes()) / double(1 << 20);
  if (dtype == POSENC_F32) {
    const double unfused = once(key + "/unfused", [&] {
      UnfusedAttention baseline(d);
      return seconds_of([&] { baseline.run(context, call.tensors()); });
    });
    set_speedup(state, "x_unfused", unfused, seconds);
  } else {
    const double f32 = once(key + "/fused_f32", [&] {
      posenc_attention_desc df = d;
      df.dtype = POSENC_F32;
      const FusedCall call_f32(context, df, in);
      return seconds_of([&] { call_f32(); call_f32(); call_f32(); }) / 3.0;
    });
    set_speedup(state, "x_fp32", f32, seconds);
  }
}

}  // namespace

void register_attention_benchmarks() {
  for (const Shape& shape : kShapes) {
    for (posenc_dtype dtype : {POSENC_F32, POSENC_BF16}) {
      const std::string name = std::string("attention/") + shape.name +
                               (dtype == POSENC_BF16 ? "/bf16" : "/f32");
      register_per_isa(name, [shape, dtype](benchmark::State& state, posenc_context* context) {
        fused(state, context, shape, dtype);
      });
    }
  }
}

}  // namespace posenc::bench
