// RoPE on q and k of B=1, H=32, T=2048, d=128: each ISA path's time as a ratio
// to memcpy of the same bytes (q and k) on all threads, in the same run.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_families.hpp"
#include "bench_support.hpp"

namespace posenc::bench {
namespace {

constexpr int64_t kBatch = 1, kHeads = 32, kTokens = 2048, kDim = 128;
constexpr size_t kElems = size_t(kBatch * kHeads * kTokens * kDim);

struct Variant {
  posenc_rope_pairing pairing;
  posenc_dtype dtype;
  bool cached;
  bool in_place;
};

template <class Value>
void rope_qk(benchmark::State& state, posenc_context* context, const Variant& v) {
  posenc_rope_config config;
  posenc_rope_config_init(&config, kDim);
  config.pairing = v.pairing;
  posenc_rope_cache* cache = nullptr;
  if (v.cached) posenc_rope_cache_create(context, &config, kTokens, &cache);
  const Value half = std::is_same<Value, float>::value ? Value(0.5f) : Value(0x3F00);  // bf16 0.5
  std::vector<Value> q(kElems, half), k(kElems, half);
  std::vector<Value> q_out(v.in_place ? 0 : kElems), k_out(v.in_place ? 0 : kElems);
  Value* qo = v.in_place ? q.data() : q_out.data();
  Value* ko = v.in_place ? k.data() : k_out.data();
  const double t = timed_loop(state, [&] {
    posenc_rope_qk(context, cache ? nullptr : &config, cache, nullptr, POSENC_ROPE_BTHD, v.dtype,
                   kBatch, kTokens, kHeads, kHeads, kDim, q.data(), qo, k.data(), ko);
  });
  posenc_rope_cache_destroy(cache);
  const size_t bytes = 2 * kElems * sizeof(Value);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * bytes));
  set_speedup(state, "x_memcpy", memcpy_seconds(bytes), t);
}

}  // namespace

void register_rope_benchmarks() {
  for (auto pairing : {POSENC_ROPE_HALF_SPLIT, POSENC_ROPE_INTERLEAVED}) {
    for (auto dtype : {POSENC_F32, POSENC_BF16}) {
      for (bool cached : {true, false}) {
        for (bool in_place : {false, true}) {
          const Variant v{pairing, dtype, cached, in_place};
          const std::string name =
              std::string("rope_qk/B1xH32xT2048xD128/") +
              (pairing == POSENC_ROPE_HALF_SPLIT ? "half_split" : "interleaved") + "/" +
              (dtype == POSENC_F32 ? "f32" : "bf16") + "/" + (cached ? "cache" : "on_the_fly") +
              "/" + (in_place ? "in_place" : "out_of_place");
          register_per_isa(name, [v](benchmark::State& state, posenc_context* context) {
            if (v.dtype == POSENC_F32) {
              rope_qk<float>(state, context, v);
            } else {
              rope_qk<uint16_t>(state, context, v);
            }
          });
        }
      }
    }
  }
}

}  // namespace posenc::bench
