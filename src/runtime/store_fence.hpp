// The fence after non-temporal stores.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace posenc {

// Orders the calling thread's non-temporal stores (the kernels' *_stream
// variants) before its later stores: x86-64 does not order them by itself,
// so an op that streams fences each task before the parallel region ends
// and other threads read the output. Once per task, not per row: a fence
// after each 4 KiB row halved the streamed write rate on the development
// box. Elsewhere the streamed kernels use ordinary stores; nothing to do.
inline void store_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace posenc
