// Position logits on each ISA path, against the seeds' way and the machine's
// limits measured in the same run:
// - rel_to_abs: the gather against the pad / flatten / pad / reshape / slice
//   sequence (in C++, on all threads) and against memcpy of the output bytes;
// - 1D relative logits: against the seeds' way (one GEMM to [T, 2T-1] with
//   posenc's oneDNN matmul, then the pad/reshape skew) and against the lower
//   bound max(2*B*H*T*T*d FLOPs at the oneDNN GEMM rate, output bytes at
//   memset bandwidth); also against one GEMM of the same FLOPs and output
//   ([B*H*T, d] x [d, T], the exact products with no relative structure);
// - 2D relative logits, decomposed and full, against the same kind of bound.
// Counters named x_<what> are <what>'s seconds over ours: above 1, faster.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "bench_families.hpp"
#include "bench_support.hpp"
#include "reference/relative.hpp"
#include "runtime/matmul.hpp"

namespace posenc::bench {
namespace {

// Best of a few runs after a warm-up, for the baselines timed outside the
// benchmark loop.
template <class Fn>
double best_seconds(const Fn& fn) {
  fn();
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// The seeds' skew of `matrices` [L, 2L-1] matrices, one matrix per task on
// all OpenMP threads (as torch would run its copies).
void pad_reshape_all(int64_t matrices, int64_t length, const float* in, float* out) {
  const int64_t workspace_floats = reference::pad_reshape_workspace(length);
#pragma omp parallel
  {
    std::vector<float> workspace(static_cast<size_t>(workspace_floats));
#pragma omp for schedule(static)
    for (int64_t m = 0; m < matrices; ++m) {
      reference::pad_reshape_rel_to_abs(length, in + m * length * (2 * length - 1),
                                        out + m * length * length, workspace.data());
    }
  }
}

// C[rows, columns] = A[rows, dim] x B[columns, dim]^T with posenc's oneDNN
// matmul on the default threads.
void gemm_abt(int64_t rows, int64_t columns, int64_t dim, const float* a, const float* b,
              float* c) {
  MatmulShape s;
  s.m = rows;
  s.n = columns;
  s.k = dim;
  s.lda = s.ldb = dim;
  s.ldc = columns;
  s.transpose_b = true;
  matmul(s, a, b, c);
}

double gemm_seconds(double flops) { return flops / (machine_figures().gemm_gflops * 1e9); }

// The lower bound of an op that does `flops` of GEMM work and writes
// `bytes`, from the figures of this run.
double bound_seconds(double flops, size_t bytes) {
  return std::max(gemm_seconds(flops), memset_seconds(bytes));
}

void rel_to_abs(benchmark::State& state, posenc_context* context, int64_t batch, int64_t heads,
                int64_t length) {
  const int64_t matrices = batch * heads;
  const std::vector<float> in(size_t(matrices * length * (2 * length - 1)), 0.5f);
  std::vector<float> out(size_t(matrices * length * length));
  const double t = timed_loop(state, [&] {
    posenc_rel_to_abs(context, batch, heads, length, in.data(), out.data());
  });
  const size_t bytes = out.size() * sizeof(float);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * bytes));
  set_speedup(state, "x_pad_reshape",
              best_seconds([&] { pad_reshape_all(matrices, length, in.data(), out.data()); }),
              t);
  set_speedup(state, "x_memcpy", memcpy_seconds(bytes), t);
}

void relative_1d(benchmark::State& state, posenc_context* context, int64_t batch,
                 int64_t heads, int64_t length, int64_t dim) {
  const int64_t rows = batch * heads * length, distances = 2 * length - 1;
  const std::vector<float> q(size_t(rows * dim), 0.5f), table(size_t(distances * dim), 0.25f);
  std::vector<float> out(size_t(rows * length));
  const double t = timed_loop(state, [&] {
    posenc_relative_logits_1d(context, batch, heads, length, length, dim, q.data(),
                              table.data(), 1, nullptr, out.data());
  });
  const size_t bytes = out.size() * sizeof(float);
  const double flops = 2.0 * double(rows) * double(length) * double(dim);
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);

  std::vector<float> scores(size_t(rows * distances));
  set_speedup(state, "x_seeds", best_seconds([&] {
                gemm_abt(rows, distances, dim, q.data(), table.data(), scores.data());
                pad_reshape_all(batch * heads, length, scores.data(), out.data());
              }),
              t);
  set_speedup(state, "x_bound", bound_seconds(flops, bytes), t);
  set_speedup(state, "x_same_shape_gemm", best_seconds([&] {
                gemm_abt(rows, length, dim, q.data(), table.data(), out.data());
              }),
              t);
}

void relative_2d(benchmark::State& state, posenc_context* context, int64_t batch, int64_t heads,
                 int64_t side, int64_t dim, bool full) {
  const int64_t tokens = side * side, rows = batch * heads * tokens;
  const std::vector<float> q(size_t(rows * dim), 0.5f), rh(size_t((2 * side - 1) * dim), 0.25f);
  const std::vector<float>& rw = rh;
  std::vector<float> out(size_t(rows * (full ? tokens : side))), out_w(size_t(rows * side));
  const double t = timed_loop(state, [&] {
    if (full) {
      posenc_relative_logits_2d(context, batch, heads, side, side, dim, q.data(), rh.data(),
                                rw.data(), 1, out.data());
    } else {
      posenc_relative_logits_2d_decomposed(context, batch, heads, side, side, dim, q.data(),
                                           rh.data(), rw.data(), 1, out.data(), out_w.data());
    }
  });
  // The exact products: X + Y dot products of length d per query.
  const double flops = 2.0 * double(rows) * double(2 * side) * double(dim);
  const size_t bytes = (full ? out.size() : out.size() + out_w.size()) * sizeof(float);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  set_speedup(state, "x_bound", bound_seconds(flops, bytes), t);
  set_speedup(state, "x_memset", memset_seconds(bytes), t);
}

}  // namespace

void register_relative_benchmarks() {
  register_per_isa("rel_to_abs/B2xH8xL512", [](benchmark::State& s, posenc_context* c) {
    rel_to_abs(s, c, 2, 8, 512);
  });
  register_per_isa("rel_to_abs/B1xH8xL2048", [](benchmark::State& s, posenc_context* c) {
    rel_to_abs(s, c, 1, 8, 2048);
  });
  register_per_isa("relative_logits_1d/B2xH8xT512xd64", [](benchmark::State& s,
                                                           posenc_context* c) {
    relative_1d(s, c, 2, 8, 512, 64);
  });
  register_per_isa("relative_logits_1d/B1xH8xT2048xd64", [](benchmark::State& s,
                                                            posenc_context* c) {
    relative_1d(s, c, 1, 8, 2048, 64);
  });
  register_per_isa("relative_logits_2d_decomposed/B8xH4x14x14xd128",
                   [](benchmark::State& s, posenc_context* c) {
                     relative_2d(s, c, 8, 4, 14, 128, false);
                   });
  register_per_isa("relative_logits_2d/B8xH4x14x14xd128",
                   [](benchmark::State& s, posenc_context* c) {
                     relative_2d(s, c, 8, 4, 14, 128, true);
                   });
  register_per_isa("relative_logits_2d_decomposed/B1xH4x64x64xd64",
                   [](benchmark::State& s, posenc_context* c) {
                     relative_2d(s, c, 1, 4, 64, 64, false);
                   });
  register_per_isa("relative_logits_2d/B1xH4x64x64xd64",
                   [](benchmark::State& s, posenc_context* c) {
                     relative_2d(s, c, 1, 4, 64, 64, true);
                   });
}

}  // namespace posenc::bench
