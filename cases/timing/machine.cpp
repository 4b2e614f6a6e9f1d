#include "cases/timing/machine.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "runtime/error.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"

namespace posenc::cases {
namespace {

std::vector<char>& buffer(int slot, size_t bytes) {
  static std::map<std::pair<int, size_t>, std::vector<char>> buffers;
  std::vector<char>& b = buffers[{slot, bytes}];
  if (b.size() != bytes) b.assign(bytes, 1);
  return b;
}

// Calls chunk(begin, end) on equal parts of [0, bytes), one per OpenMP
// thread, as the ops themselves use every thread.
template <class Chunk>
void split_over_threads(size_t bytes, const Chunk& chunk) {
#pragma omp parallel
  {
    const size_t parts = size_t(omp_get_num_threads());
    const size_t part = (bytes + parts - 1) / parts;
    const size_t begin = std::min(bytes, part * size_t(omp_get_thread_num()));
    chunk(begin, std::min(bytes, begin + part));
  }
}

// A and B of `type` (their fp32 bits serve as bf16 pairs: the values do not
// matter), C in fp32; B packed for the GEMM where oneDNN packs it. 0 where
// oneDNN has no such GEMM on this CPU or cap.
double gemm_gflops(posenc_dtype type, int64_t n) {
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), c(size_t(n * n));
  MatmulShape s;
  s.m = s.n = s.k = s.lda = s.ldb = s.ldc = n;
  s.ab_type = type;
  s.onednn_threads = onednn_team_threads(omp_get_max_threads());
  try {
    MatmulShape packed = s;
    packed.b_packed = true;
    std::vector<char> packed_b(packed_b_bytes(packed));
    if (!packed_b.empty()) pack_b(packed, b.data(), packed_b.data());
    const MatmulShape& run = packed_b.empty() ? s : packed;
    const void* run_b = packed_b.empty() ? static_cast<const void*>(b.data()) : packed_b.data();
    const double seconds = median_seconds([&] { matmul(run, a.data(), run_b, c.data()); }, 5);
    return 2.0 * double(n * n * n) / seconds * 1e-9;
  } catch (const Error&) {
    return 0.0;
  }
}

double best_gemm_gflops(posenc_dtype type) {
  return std::max(gemm_gflops(type, 1024), gemm_gflops(type, 2048));
}

}  // namespace

double median_seconds(const std::function<void()>& fn, int repeats) {
  fn();
  return median_of_runs(fn, repeats);
}

double median_of_runs(const std::function<void()>& fn, int repeats) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[size_t(repeats / 2)];
}

double memcpy_seconds(size_t bytes) {
  char* src = buffer(0, bytes).data();
  char* dst = buffer(1, bytes).data();
  return median_seconds(
      [&] {
        split_over_threads(bytes,
                           [&](size_t b, size_t e) { std::memcpy(dst + b, src + b, e - b); });
      },
      9);
}

double memset_seconds(size_t bytes) {
  char* dst = buffer(1, bytes).data();
  return median_seconds(
      [&] { split_over_threads(bytes, [&](size_t b, size_t e) { std::memset(dst + b, 3, e - b); }); },
      9);
}

const MachineFigures& machine_figures() {
  static const MachineFigures figures = [] {
    const size_t bytes = size_t(64) << 20;
    return MachineFigures{best_gemm_gflops(POSENC_F32), best_gemm_gflops(POSENC_BF16),
                          2.0 * double(bytes) / memcpy_seconds(bytes) * 1e-9,
                          double(bytes) / memset_seconds(bytes) * 1e-9};
  }();
  return figures;
}

}  // namespace posenc::cases
