#include "cases/timing/machine.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "runtime/context.hpp"
#include "runtime/error.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::cases {
namespace {

std::vector<char>& buffer(int slot, size_t bytes) {
  static std::map<std::pair<int, size_t>, std::vector<char>> buffers;
  std::vector<char>& b = buffers[{slot, bytes}];
  if (b.size() != bytes) b.assign(bytes, 1);
  return b;
}

// Calls chunk(begin, end) on equal parts of [0, bytes), one per thread of
// op_threads(), as the ops themselves use every thread.
template <class Chunk>
void split_over_threads(size_t bytes, const Chunk& chunk) {
#pragma omp parallel num_threads(op_threads())
  {
    const size_t parts = size_t(omp_get_num_threads());
    const size_t part = (bytes + parts - 1) / parts;
    const size_t begin = std::min(bytes, part * size_t(omp_get_thread_num()));
    chunk(begin, std::min(bytes, begin + part));
  }
}

// `bytes` bytes at a 64-byte boundary, as the attention's workspace gives
// its GEMMs: off it, AMX's tile loads and stores cost oneDNN 2.6.3's bf16
// GEMMs half their rate or more (malloc's 16-byte alignment of a
// std::vector took q k^T of 64 x 2048 x 128 from about 1200 to 500 GFLOP/s
// on one core of a 2-core Sapphire Rapids).
class AlignedBytes {
 public:
  explicit AlignedBytes(size_t bytes) : data_(allocate_aligned(bytes, memory_)) {
    std::memset(data_, 0, bytes);
  }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }

 private:
  std::unique_ptr<uint8_t[]> memory_;
  uint8_t* data_;
};

// The operands of a GEMM of `plain`'s shape: A and B of its type (their fp32
// bits serve as bf16 pairs: the values do not matter), C in fp32; B packed
// for the GEMM where oneDNN packs it (once, as the attention packs a head's
// keys). All 64-byte aligned (AlignedBytes).
struct GemmOperands {
  explicit GemmOperands(const MatmulShape& plain)
      : GemmOperands(plain, packed_b_bytes(packed(plain))) {}
  void multiply() {
    const void* b_as_run = run.b_packed ? packed_b.as<void>() : b.as<void>();
    matmul(run, a.as<float>(), b_as_run, c.as<float>());
  }
  static MatmulShape packed(MatmulShape shape) {
    shape.b_packed = true;
    return shape;
  }

  AlignedBytes a, b, c, packed_b;
  MatmulShape run;

 private:
  // packed_bytes 0: oneDNN reads B as stored.
  GemmOperands(const MatmulShape& plain, size_t packed_bytes)
      : a(size_t(plain.m * plain.k) * sizeof(float)),
        b(size_t(plain.k * plain.n) * sizeof(float)),
        c(size_t(plain.m * plain.n) * sizeof(float)),
        packed_b(packed_bytes),
        run(packed_bytes > 0 ? packed(plain) : plain) {
    std::fill_n(a.as<float>(), plain.m * plain.k, 0.5f);
    std::fill_n(b.as<float>(), plain.k * plain.n, 0.25f);
    if (run.b_packed) pack_b(run, b.as<float>(), packed_b.as<uint8_t>());
  }
};

// C[m, n] = A[m, k] B[k, n], all dense row-major.
MatmulShape row_major(posenc_dtype type, int64_t m, int64_t n, int64_t k) {
  MatmulShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = k;
  s.ldb = s.ldc = n;
  s.ab_type = type;
  return s;
}

// The rates below are 0 where oneDNN has no GEMM of `type` on this CPU or
// cap.

// One n^3 GEMM on oneDNN's own threads.
double team_gemm_gflops(posenc_dtype type, int64_t n) {
  MatmulShape s = row_major(type, n, n, n);
  s.onednn_threads = onednn_team_threads(op_threads());
  try {
    GemmOperands g(s);
    const double seconds = median_seconds([&] { g.multiply(); }, 5);
    return 2.0 * double(n * n * n) / seconds * 1e-9;
  } catch (const Error&) {
    return 0.0;
  }
}

double best_gemm_gflops(posenc_dtype type) {
  return std::max({team_gemm_gflops(type, 1024), team_gemm_gflops(type, 2048),
                   own_gemms_team_gflops(type, 256, 512, 1024),
                   own_gemms_team_gflops(type, 512, 512, 512)});
}

}  // namespace

int op_threads() { return resolve_context(nullptr).num_threads; }

// kRepeats GEMMs a thread and call, the median of kCalls calls (5 read a
// fixed time per call, not a rate, on a 2-core VM with a busy neighbour);
// the rate of the whole team, which oneDNN's threaded n^3 need not reach
// (with AMX it did not).
double own_gemms_team_gflops(posenc_dtype type, int64_t m, int64_t n, int64_t k) {
  constexpr int kRepeats = 8, kCalls = 15;
  const int threads = op_threads();
  const MatmulShape s = row_major(type, m, n, k);
  try {
    std::vector<GemmOperands> operands;
    operands.reserve(size_t(threads));
    for (int t = 0; t < threads; ++t) operands.emplace_back(s);
    GemmSlots(threads).prepare(operands[0].run);
    const double seconds = median_seconds(
        [&] {
          parallel_for(threads, threads, [&](int64_t task) {
            for (int r = 0; r < kRepeats; ++r) operands[size_t(task)].multiply();
          });
        },
        kCalls);
    return 2.0 * double(m * n * k) * kRepeats * threads / seconds * 1e-9;
  } catch (const Error&) {
    return 0.0;
  }
}

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
      [&] {
        split_over_threads(bytes, [&](size_t b, size_t e) { std::memset(dst + b, 3, e - b); });
      },
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
