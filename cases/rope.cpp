// Rotary embeddings through posenc_rope_qk (q and k) and posenc_rope. The
// fp32 half-split case of the benchmark is timed against the naive way (a
// cos/sin table, then x*cos + rotate_half(x)*sin, as Hugging Face writes it);
// every case is set against a memcpy of the same bytes.
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cases/case.hpp"
#include "reference/rope.hpp"
#include "cases/values.hpp"

namespace posenc::cases {
namespace {

// One cos/sin cache per case and size, made on first use and then shared by
// every problem of the case (and every thread), as a serving program shares
// one.
struct SharedCache {
  std::once_flag once;
  std::shared_ptr<posenc_rope_cache> cache;
  posenc_status status = POSENC_OK;
};

struct Spec {
  bool qk;  // posenc_rope_qk on q and k, or posenc_rope on x
  posenc_rope_config config;
  posenc_rope_layout layout;
  posenc_dtype dtype;
  int64_t batch, tokens, heads, head_dim;
  int64_t offset;
  std::vector<int64_t> ids;  // [batch, tokens]; empty: offset + t
  int64_t cache_positions;   // 0: angles on the fly
  bool in_place;
  std::shared_ptr<SharedCache> cache;
};

std::string describe(const Spec& s) {
  std::string d = "B" + std::to_string(s.batch) + " H" + std::to_string(s.heads) + " T" +
                  std::to_string(s.tokens) + " D" + std::to_string(s.head_dim);
  if (s.config.rotary_dim != s.head_dim) d += " rot" + std::to_string(s.config.rotary_dim);
  if (s.layout == POSENC_ROPE_BHTD) d += " BHTD";
  d += s.config.pairing == POSENC_ROPE_HALF_SPLIT ? " half" : " interleaved";
  if (s.config.scaling == POSENC_ROPE_SCALING_YARN) d += " yarn";
  if (s.dtype == POSENC_BF16) d += " bf16";
  d += s.cache_positions > 0 ? " cache" : " on-the-fly";
  if (s.offset != 0) d += " @" + std::to_string(s.offset);
  if (!s.ids.empty()) d += " ids<=" + std::to_string(s.ids.back());
  if (s.in_place) d += " in-place";
  return d;
}

std::vector<int64_t> positions_of(const Spec& s) {
  if (!s.ids.empty()) return s.ids;
  std::vector<int64_t> positions;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t t = 0; t < s.tokens; ++t) positions.push_back(s.offset + t);
  }
  return positions;
}

// The rotation and the frequencies of its scaling in double.
std::vector<double> reference_of(const Spec& s, const std::vector<float>& x) {
  return reference::rope(reference::rope_reference(s.config, s.layout, s.batch, s.tokens, s.heads,
                                                   s.head_dim, positions_of(s)),
                         x.data());
}

// x*cos + rotate_half(x)*sin over [T, H, d] with per-position tables.
void naive_rotate_half(const Spec& s, const float* x, float* out, const float* cos_t,
                       const float* sin_t) {
  const int64_t dim = s.head_dim, half = dim / 2;
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const float* xr = x + (t * s.heads + h) * dim;
      float* o = out + (t * s.heads + h) * dim;
      for (int64_t j = 0; j < dim; ++j) {
        const float rotated = j < half ? -xr[j + half] : xr[j - half];
        o[j] = xr[j] * cos_t[t * dim + j] + rotated * sin_t[t * dim + j];
      }
    }
  }
}

// Inputs (kept), the buffers the op writes (the inputs' copies when in
// place), and the naive way's tables.
struct Buffers {
  Shared<float> q, k;        // fp32 values (rounded to bf16 for bf16)
  Shared<uint16_t> q16, k16;  // bf16 bits of q, k
  std::vector<float> q_out, k_out;
  std::vector<uint16_t> q_out16, k_out16;
  std::vector<float> cos_table, sin_table;
};


Problem rope_problem(const Spec& s) {
  auto b = std::make_shared<Buffers>();
  const size_t elems = size_t(s.batch * s.tokens * s.heads * s.head_dim);
  const size_t k_elems = s.qk ? elems : 0;
  if (s.dtype == POSENC_BF16) {
    b->q = shared_bf16_values(elems, 40), b->k = shared_bf16_values(k_elems, 41);
    b->q16 = shared_bf16_bits(elems, 40), b->k16 = shared_bf16_bits(k_elems, 41);
    b->q_out16 = *b->q16, b->k_out16 = *b->k16;
  } else {
    b->q = shared_floats(elems, 40), b->k = shared_floats(k_elems, 41);
    b->q_out = *b->q, b->k_out = *b->k;
  }
  const double tensors = s.qk ? 2.0 : 1.0;
  const double size = double(elems) * (s.dtype == POSENC_BF16 ? 2 : 4) * tensors;
  Problem p;
  p.bytes = 2 * size;
  p.write_bytes = size;
  p.run = [b, s](posenc_context* ctx) {
    const posenc_rope_cache* cache = nullptr;
    if (s.cache_positions > 0) {
      std::call_once(s.cache->once, [&s] {
        posenc_rope_cache* made = nullptr;
        s.cache->status = posenc_rope_cache_create(nullptr, &s.config, s.cache_positions, &made);
        s.cache->cache.reset(made, posenc_rope_cache_destroy);
      });
      if (s.cache->status != POSENC_OK) return s.cache->status;
      cache = s.cache->cache.get();
    }
    const posenc_rope_positions positions{s.offset, s.ids.empty() ? nullptr : s.ids.data(),
                                          POSENC_ROPE_POSITIONS_INT64};
    const posenc_rope_config* config = cache != nullptr ? nullptr : &s.config;
    // In place: the op reads and writes the output buffers, first filled with the inputs.
    const bool bf16 = s.dtype == POSENC_BF16;
    void* q_out = bf16 ? static_cast<void*>(b->q_out16.data()) : b->q_out.data();
    void* k_out = bf16 ? static_cast<void*>(b->k_out16.data()) : b->k_out.data();
    const void* q = bf16 ? static_cast<const void*>(b->q16->data()) : b->q->data();
    const void* k = bf16 ? static_cast<const void*>(b->k16->data()) : b->k->data();
    if (s.in_place) q = q_out, k = k_out;
    if (!s.qk) {
      return posenc_rope(ctx, config, cache, &positions, s.layout, s.dtype, s.batch, s.tokens,
                         s.heads, s.head_dim, q, q_out);
    }
    return posenc_rope_qk(ctx, config, cache, &positions, s.layout, s.dtype, s.batch, s.tokens,
                          s.heads, s.heads, s.head_dim, q, q_out, k, k_out);
  };
  p.output = [b, s] {
    std::vector<float> out = s.dtype == POSENC_BF16 ? from_bf16(b->q_out16) : b->q_out;
    const std::vector<float> k = s.dtype == POSENC_BF16 ? from_bf16(b->k_out16) : b->k_out;
    out.insert(out.end(), k.begin(), k.end());
    return out;
  };
  p.reference = [b, s] {
    std::vector<double> want = reference_of(s, *b->q);
    if (s.qk) {
      const std::vector<double> k = reference_of(s, *b->k);
      want.insert(want.end(), k.begin(), k.end());
    }
    return want;
  };
  const bool naive_applies = s.qk && s.dtype == POSENC_F32 && !s.in_place && s.ids.empty() &&
                             s.offset == 0 && s.batch == 1 && s.layout == POSENC_ROPE_BTHD &&
                             s.config.pairing == POSENC_ROPE_HALF_SPLIT &&
                             s.config.rotary_dim == s.head_dim &&
                             s.config.scaling == POSENC_ROPE_SCALING_NONE;
  if (naive_applies) {
    p.baseline = [b, s] {
      if (b->cos_table.empty()) {  // made in the warm-up call, as the model makes it once
        const int64_t dim = s.head_dim;
        std::vector<double> inv_freq(size_t(dim / 2));
        posenc_rope_inverse_frequencies(&s.config, inv_freq.data(), nullptr);
        b->cos_table.resize(size_t(s.tokens * dim));
        b->sin_table.resize(size_t(s.tokens * dim));
        for (int64_t t = 0; t < s.tokens; ++t) {
          for (int64_t j = 0; j < dim; ++j) {
            const double angle = double(t) * inv_freq[size_t(j % (dim / 2))];
            b->cos_table[size_t(t * dim + j)] = float(std::cos(angle));
            b->sin_table[size_t(t * dim + j)] = float(std::sin(angle));
          }
        }
      }
      naive_rotate_half(s, b->q->data(), b->q_out.data(), b->cos_table.data(),
                        b->sin_table.data());
      naive_rotate_half(s, b->k->data(), b->k_out.data(), b->cos_table.data(),
                        b->sin_table.data());
    };
  }
  return p;
}

// Tolerances: fp32 rounding of O(1) rotations; bf16 rounding of the output.
const Op<Spec> kRopeQk{"rope", "rope_qk", 1e-5, "naive", describe, rope_problem};
const Op<Spec> kRopeQkBf16{"rope", "rope_qk", 2e-2, "", describe, rope_problem};
const Op<Spec> kRope{"rope", "rope", 1e-5, "", describe, rope_problem};

// q and k of [1, tokens, heads, head_dim] from position 0: options after.
Spec qk(int64_t tokens, int64_t heads, int64_t head_dim, posenc_rope_pairing pairing,
        bool cached) {
  Spec s{};
  s.qk = true;
  posenc_rope_config_init(&s.config, head_dim);
  s.config.pairing = pairing;
  s.layout = POSENC_ROPE_BTHD;
  s.dtype = POSENC_F32;
  s.batch = 1, s.tokens = tokens, s.heads = heads, s.head_dim = head_dim;
  s.cache_positions = cached ? tokens : 0;
  s.cache = std::make_shared<SharedCache>();
  return s;
}
Spec bf16(Spec s) {
  s.dtype = POSENC_BF16;
  return s;
}
Spec in_place(Spec s) {
  s.in_place = true;
  return s;
}

}  // namespace

std::vector<Case> rope_cases() {
  const auto half = POSENC_ROPE_HALF_SPLIT, interleaved = POSENC_ROPE_INTERLEAVED;
  const std::vector<std::string> timed{"bench", "demo"};
  // Partial rotation (64 of 80) of 13 tokens from position 1000.
  Spec partial = qk(13, 3, 80, half, false);
  partial.config.rotary_dim = 64;
  partial.offset = 1000;
  // Far positions by id, on the fly and from a cache (BHTD).
  Spec far = qk(5, 2, 128, interleaved, false);
  far.qk = false;
  far.layout = POSENC_ROPE_BHTD;
  far.ids = {0, 1, 77, 4096, 499999};
  Spec cached_ids = far;
  cached_ids.ids = {0, 1, 77, 4096, 8191};
  cached_ids.cache_positions = 8192;
  cached_ids.cache = std::make_shared<SharedCache>();
  // A shared YaRN cache (BHTD, rotary 64 of 96) and the interleaved pairs on
  // the fly from position 300, for two sequences.
  Spec yarn = qk(64, 4, 96, half, true);
  yarn.qk = false;
  yarn.batch = 2;
  yarn.layout = POSENC_ROPE_BHTD;
  yarn.config.rotary_dim = 64;
  yarn.config.scaling = POSENC_ROPE_SCALING_YARN;
  yarn.config.factor = 4.0;
  yarn.config.original_max_positions = 32;
  // GPT-NeoX-20B's partial rotation in bf16: 24 of a head of 96 (12 pairs,
  // a tail of a batch on the AVX2 and AVX-512 paths); timed on 256 tokens,
  // whose q and k (3 MiB each) stay in cache as after their projection.
  const auto neox = [&](int64_t tokens, int64_t heads) {
    Spec s = bf16(qk(tokens, heads, 96, half, true));
    s.config.rotary_dim = 24;
    return s;
  };
  Spec decode = qk(64, 4, 96, interleaved, false);
  decode.batch = 2;
  decode.config.rotary_dim = 80;
  decode.offset = 300;
  return {
      kRopeQk({"check"}, partial),
      kRope({"check"}, far),
      kRope({"check"}, cached_ids),
      kRope({}, yarn),
      kRopeQk({}, decode),
      kRopeQk(timed, qk(2048, 32, 128, half, true), qk(37, 3, 128, half, true)),
      kRopeQk(timed, qk(2048, 32, 128, half, false), qk(37, 3, 128, half, false)),
      kRopeQk(timed, qk(2048, 32, 128, interleaved, true), qk(37, 3, 128, interleaved, true)),
      kRopeQk(timed, qk(2048, 32, 128, interleaved, false), qk(37, 3, 128, interleaved, false)),
      kRopeQk(timed, in_place(qk(2048, 32, 128, half, true)), in_place(qk(37, 3, 128, half, true))),
      kRopeQkBf16(timed, bf16(qk(2048, 32, 128, half, true)), bf16(qk(37, 3, 96, half, true))),
      kRopeQkBf16(timed, neox(256, 64), neox(37, 3)),
  };
}

}  // namespace posenc::cases
