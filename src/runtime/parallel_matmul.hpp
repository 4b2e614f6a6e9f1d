// One GEMM on a context's threads with the same bits at every thread count.
// oneDNN made for a team splits a GEMM's work by the team's size, and some
// sums' order (hence their rounding) follows the split, on x86 as on
// aarch64; here the split is fixed tiles, each tile's GEMM on one thread.
#pragma once

#include "runtime/matmul.hpp"

namespace posenc {

// matmul(shape, a, b, c) in tiles of C (of each batch item) over `threads`
// threads. B as stored: a b_packed shape is refused (an internal error).
void parallel_matmul(int threads, const MatmulShape& shape, const void* a, const void* b,
                     void* c);

}  // namespace posenc
