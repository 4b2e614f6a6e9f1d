// RoPE on q and k of B=1, H=32, T=2048, d=128 (BTHD): against a memcpy of the
// same bytes, and the fp32 half-split case against the naive way (a cos/sin
// table, then x*cos + rotate_half(x)*sin, as Hugging Face writes it).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_case.hpp"

namespace posenc::bench {
namespace {

constexpr int64_t kHeads = 32, kTokens = 2048, kDim = 128;
constexpr size_t kElems = size_t(kHeads * kTokens * kDim);

struct Variant {
  posenc_rope_pairing pairing;
  posenc_dtype dtype;
  bool cached;
  bool in_place;
};

struct RopeBuffers {
  posenc_rope_config config;
  std::unique_ptr<posenc_rope_cache, void (*)(posenc_rope_cache*)> cache{nullptr,
                                                                           posenc_rope_cache_destroy};
  std::vector<uint32_t> q, k, q_out, k_out;  // 4-byte slots hold either dtype
  std::vector<float> cos_table, sin_table;   // the naive way's tables
};

// x*cos + rotate_half(x)*sin over [T, H, d] with per-position tables.
void naive_rotate_half(const float* x, float* out, const float* cos_t, const float* sin_t) {
  const int64_t half = kDim / 2;
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t h = 0; h < kHeads; ++h) {
      const float* xr = x + (t * kHeads + h) * kDim;
      float* o = out + (t * kHeads + h) * kDim;
      for (int64_t j = 0; j < kDim; ++j) {
        const float rotated = j < half ? -xr[j + half] : xr[j - half];
        o[j] = xr[j] * cos_t[t * kDim + j] + rotated * sin_t[t * kDim + j];
      }
    }
  }
}

BenchCase rope_case(const Variant& v) {
  auto b = std::make_shared<RopeBuffers>();
  posenc_rope_config_init(&b->config, kDim);
  b->config.pairing = v.pairing;
  if (v.cached) {
    posenc_rope_cache* cache = nullptr;
    posenc_rope_cache_create(nullptr, &b->config, kTokens, &cache);
    b->cache.reset(cache);
  }
  const float half = 0.5f;
  uint32_t fill;
  std::memcpy(&fill, &half, sizeof fill);
  const size_t slots = v.dtype == POSENC_F32 ? kElems : kElems / 2;
  if (v.dtype == POSENC_BF16) fill = 0x3F003F00u;  // two bf16 0.5
  b->q.assign(slots, fill);
  b->k.assign(slots, fill);
  if (!v.in_place) {
    b->q_out.assign(slots, 0);
    b->k_out.assign(slots, 0);
  }
  const double bytes = 2.0 * double(slots) * 4;  // q and k
  BenchCase c;
  c.op = "rope_qk";
  c.shape = std::string("B1 H32 T2048 D128 ") +
            (v.pairing == POSENC_ROPE_HALF_SPLIT ? "half" : "interleaved") +
            (v.dtype == POSENC_BF16 ? " bf16" : "") + (v.cached ? " cache" : " on-the-fly") +
            (v.in_place ? " in-place" : "");
  c.bytes = 2 * bytes;
  c.write_bytes = bytes;
  c.run = [b, v](posenc_context* ctx) {
    void* qo = v.in_place ? b->q.data() : b->q_out.data();
    void* ko = v.in_place ? b->k.data() : b->k_out.data();
    posenc_rope_qk(ctx, b->cache ? nullptr : &b->config, b->cache.get(), nullptr,
                   POSENC_ROPE_BTHD, v.dtype, 1, kTokens, kHeads, kHeads, kDim, b->q.data(), qo,
                   b->k.data(), ko);
  };
  if (v.dtype == POSENC_F32 && v.pairing == POSENC_ROPE_HALF_SPLIT && !v.in_place) {
    b->cos_table.resize(size_t(kTokens * kDim));
    b->sin_table.resize(size_t(kTokens * kDim));
    std::vector<double> inv_freq(size_t(kDim / 2));
    posenc_rope_inverse_frequencies(&b->config, inv_freq.data(), nullptr);
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t j = 0; j < kDim; ++j) {
        const double angle = double(t) * inv_freq[size_t(j % (kDim / 2))];
        b->cos_table[size_t(t * kDim + j)] = float(std::cos(angle));
        b->sin_table[size_t(t * kDim + j)] = float(std::sin(angle));
      }
    }
    c.baseline_name = "naive";
    c.baseline = [b] {
      auto f = [](std::vector<uint32_t>& v) { return reinterpret_cast<float*>(v.data()); };
      naive_rotate_half(f(b->q), f(b->q_out), b->cos_table.data(), b->sin_table.data());
      naive_rotate_half(f(b->k), f(b->k_out), b->cos_table.data(), b->sin_table.data());
    };
  }
  return c;
}

}  // namespace

CaseList rope_cases() {
  CaseList cases;
  for (const Variant& v : {Variant{POSENC_ROPE_HALF_SPLIT, POSENC_F32, true, false},
                           Variant{POSENC_ROPE_HALF_SPLIT, POSENC_F32, false, false},
                           Variant{POSENC_ROPE_INTERLEAVED, POSENC_F32, true, false},
                           Variant{POSENC_ROPE_INTERLEAVED, POSENC_F32, false, false},
                           Variant{POSENC_ROPE_HALF_SPLIT, POSENC_F32, true, true},
                           Variant{POSENC_ROPE_HALF_SPLIT, POSENC_BF16, true, false}}) {
    cases.push_back(rope_case(v));
  }
  return cases;
}

}  // namespace posenc::bench
