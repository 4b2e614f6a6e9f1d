// OpenMP loops with an explicit thread count.
#pragma once

#include <cstdint>

namespace posenc {

// Calls body(i) for i in [0, count) on up to `threads` threads, static
// schedule. body must not throw.
template <class Body>
void parallel_for(int threads, int64_t count, const Body& body) {
  if (threads <= 1 || count <= 1) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < count; ++i) body(i);
}

}  // namespace posenc
