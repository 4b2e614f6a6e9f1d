// Demo of the absolute encodings: a corner of the sinusoid table, then the
// table and the on-the-fly add on each ISA path against naive loops.
#include <cmath>
#include <cstdio>
#include <vector>

#include "cases/machine.hpp"
#include "checks.hpp"
#include "demo.hpp"
#include "posenc/core.hpp"
#include "reference/absolute.hpp"
#include "runtime/compiled_isas.hpp"

namespace posenc::cli {
namespace {

constexpr int64_t kLength = 2048, kDim = 512, kBatch = 8;

// The naive way in fp32, as the PyTorch tutorial writes it: a table of
// sin/cos(k * div_i), then x + table.
void naive_add(const std::vector<float>& x, std::vector<float>& table, std::vector<float>& out) {
  for (int64_t k = 0; k < kLength; ++k) {
    for (int64_t i = 0; i < kDim; i += 2) {
      const float div = std::exp(float(i) * -(std::log(10000.0f) / float(kDim)));
      table[size_t(k * kDim + i)] = std::sin(float(k) * div);
      table[size_t(k * kDim + i + 1)] = std::cos(float(k) * div);
    }
  }
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t j = 0; j < kLength * kDim; ++j) {
      out[size_t(b * kLength * kDim + j)] = x[size_t(b * kLength * kDim + j)] + table[size_t(j)];
    }
  }
}

}  // namespace

bool demo_absolute() {
  std::printf("\n== absolute encodings: sinusoid P[k,2i]=sin(k w_i), P[k,2i+1]=cos(k w_i) ==\n");
  std::vector<float> corner(4 * 8);
  posenc_sinusoid_table(nullptr, 4, 8, 0, 10000.0, POSENC_SINCOS_INTERLEAVED, POSENC_F32,
                        corner.data());
  for (int k = 0; k < 4; ++k) {
    std::printf("  P[%d,:] =", k);
    for (int c = 0; c < 8; ++c) std::printf(" %7.4f", corner[size_t(k * 8 + c)]);
    std::printf("\n");
  }

  const size_t n = size_t(kBatch * kLength * kDim);
  std::vector<float> x(n), out(n), naive_out(n), table(size_t(kLength * kDim));
  for (size_t i = 0; i < n; ++i) x[i] = float(i % 101) * 0.01f - 0.5f;
  const double naive = bench::median_seconds([&] { naive_add(x, table, naive_out); }, 3);
  const auto want = reference::add_sinusoid(kBatch, kLength, kDim, 0, 10000.0,
                                            POSENC_SINCOS_INTERLEAVED, x.data());
  std::printf("\n  add_sinusoid B=%lld T=%lld D=%lld (naive fp32 table + add: %.2f ms)\n",
              (long long)kBatch, (long long)kLength, (long long)kDim, naive * 1e3);
  std::printf("  %-9s %10s %10s %12s\n", "isa", "ms", "speedup", "max error");
  bool ok = true;
  for (posenc_isa isa : runnable_isas()) {
    const Context ctx{Isa(isa)};
    const double t = bench::median_seconds([&] {
      posenc_add_sinusoid(ctx.get(), kBatch, kLength, kDim, 0, 10000.0,
                          POSENC_SINCOS_INTERLEAVED, x.data(), out.data());
    }, 7);
    const double err = max_abs_error(out.data(), want);
    ok = ok && err < 4e-6;
    std::printf("  %-9s %10.2f %9.1fx %12.2g\n", posenc_isa_name(isa), t * 1e3, naive / t, err);
  }
  std::printf("  naive fp32 max error: %.2g\n", max_abs_error(naive_out.data(), want));
  return ok;
}

}  // namespace posenc::cli
