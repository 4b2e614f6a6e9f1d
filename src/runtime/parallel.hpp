// OpenMP loops with an explicit thread count.
#pragma once

#include <omp.h>

#include <cstdint>

namespace posenc {

// Sets the OpenMP thread count of the calling thread (which oneDNN's
// primitives use outside a parallel region) for the life of the scope. Run
// with a context's thread count, it makes that count govern oneDNN as well;
// run with 1 around a serial loop of tiles, each tile's GEMM runs on one
// thread exactly as it does inside a parallel region, so results do not
// depend on the thread count.
class OpenMpThreads {
 public:
  explicit OpenMpThreads(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~OpenMpThreads() { omp_set_num_threads(saved_); }
  OpenMpThreads(const OpenMpThreads&) = delete;
  OpenMpThreads& operator=(const OpenMpThreads&) = delete;

 private:
  int saved_;
};

// Calls body(i) for i in [0, count) on up to `threads` threads, static
// schedule. body must not throw.
template <class Body>
void parallel_for(int threads, int64_t count, const Body& body) {
  if (threads <= 1 || count <= 1) {
    const OpenMpThreads single(1);
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < count; ++i) body(i);
}

}  // namespace posenc
