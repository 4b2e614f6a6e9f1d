// Absolute encodings: bytes per second on each ISA path, with the ratio to
// memcpy of the same bytes and the speedup over the naive fp32 way (table
// with std::sin/std::cos, then an add), all measured in the same run.
#include <cmath>
#include <vector>

#include "bench_families.hpp"
#include "bench_support.hpp"

namespace posenc::bench {
namespace {

constexpr int64_t kBatch = 8, kTokens = 1024, kDim = 512;
constexpr size_t kElems = size_t(kBatch * kTokens * kDim);

void naive_sinusoid_table(float* table, int64_t length, int64_t dim) {
  for (int64_t k = 0; k < length; ++k) {
    for (int64_t i = 0; i + 1 < dim; i += 2) {
      const float div = std::exp(float(i) * -(std::log(10000.0f) / float(dim)));
      table[k * dim + i] = std::sin(float(k) * div);
      table[k * dim + i + 1] = std::cos(float(k) * div);
    }
  }
}

double naive_add_seconds(const std::vector<float>& x, std::vector<float>& out) {
  std::vector<float> table(size_t(kTokens * kDim));
  const auto start = std::chrono::steady_clock::now();
  naive_sinusoid_table(table.data(), kTokens, kDim);
  for (size_t j = 0; j < kElems; ++j) out[j] = x[j] + table[j % table.size()];
  benchmark::DoNotOptimize(out.data());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void sinusoid_table(benchmark::State& state, posenc_context* context) {
  const int64_t length = 4096, dim = 512;
  std::vector<float> out(size_t(length * dim));
  const size_t bytes = out.size() * sizeof(float);
  const double t = timed_loop(state, [&] {
    posenc_sinusoid_table(context, length, dim, 0, 10000.0, POSENC_SINCOS_INTERLEAVED,
                          POSENC_F32, out.data());
  });
  std::vector<float> naive(out.size());
  const auto start = std::chrono::steady_clock::now();
  naive_sinusoid_table(naive.data(), length, dim);
  const double naive_t =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  set_speedup(state, "x_naive", naive_t, t);
  set_speedup(state, "x_memset", memset_seconds(bytes), t);
}

void add_sinusoid(benchmark::State& state, posenc_context* context) {
  const std::vector<float> x(kElems, 0.5f);
  std::vector<float> out(kElems);
  const double t = timed_loop(state, [&] {
    posenc_add_sinusoid(context, kBatch, kTokens, kDim, 0, 10000.0,
                        POSENC_SINCOS_INTERLEAVED, x.data(), out.data());
  });
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * kElems * sizeof(float)));
  set_speedup(state, "x_naive", naive_add_seconds(x, out), t);
  set_speedup(state, "x_memcpy", memcpy_seconds(kElems * sizeof(float)), t);
}

void add_learned(benchmark::State& state, posenc_context* context) {
  const std::vector<float> x(kElems, 0.5f), table(size_t(kTokens * kDim), 0.25f);
  std::vector<float> out(kElems);
  const double t = timed_loop(state, [&] {
    posenc_add_learned(context, kBatch, kTokens, kDim, 0, table.data(), kTokens, x.data(),
                       out.data());
  });
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * kElems * sizeof(float)));
  set_speedup(state, "x_memcpy", memcpy_seconds(kElems * sizeof(float)), t);
}

void concat_sinusoid(benchmark::State& state, posenc_context* context) {
  const int64_t pos_dim = 128;
  const std::vector<float> x(kElems, 0.5f);
  std::vector<float> out(size_t(kBatch * kTokens * (kDim + pos_dim)));
  const double t = timed_loop(state, [&] {
    posenc_concat_sinusoid(context, kBatch, kTokens, kDim, pos_dim, 0, 10000.0,
                           POSENC_SINCOS_INTERLEAVED, x.data(), out.data());
  });
  const size_t written = out.size() * sizeof(float);
  state.SetBytesProcessed(int64_t(state.iterations()) *
                          int64_t(kElems * sizeof(float) + written));
  set_speedup(state, "x_memcpy", memcpy_seconds(written), t);
}

}  // namespace

void register_absolute_benchmarks() {
  register_per_isa("sinusoid_table/L4096xD512", sinusoid_table);
  register_per_isa("add_sinusoid/B8xT1024xD512", add_sinusoid);
  register_per_isa("add_learned/B8xT1024xD512", add_learned);
  register_per_isa("concat_sinusoid/B8xT1024x(512+128)", concat_sinusoid);
}

}  // namespace posenc::bench
