// One GEMM on a context's threads with the same bits at every thread count.
// oneDNN made for a team splits a GEMM's work by the team's size, and some
// sums' order (hence their rounding) follows the split, on x86 as on
// aarch64; here the split is fixed tiles, each tile's GEMM on one thread.
#pragma once

#include <cstddef>

#include "runtime/matmul.hpp"

namespace posenc {

// Bytes of B packed once for all the row tiles of parallel_matmul(shape)
// (of each batch item; once for a B broadcast over the batch): 0 for one
// row tile, or where oneDNN reads B as stored. Makes the primitives that
// pack it.
size_t parallel_matmul_packed_b_bytes(const MatmulShape& shape);

// matmul(shape, a, b, c) in tiles of C, of each batch item, over `threads`
// threads, B as stored (a b_packed shape is refused, an internal error).
// oneDNN multiplies a tile fastest where it spans C's rows (ldc = n, n at
// most one tile's 256 columns; parallel_matmul.cpp): a batch of column
// panels gives every tile that.
// packed_b: null (each tile's GEMM repacks its part of B, as oneDNN does),
// or, where parallel_matmul_packed_b_bytes(shape) is not 0, that many bytes
// where B is packed first, batch item by item and column tile by column
// tile, for every row tile's GEMM to read.
void parallel_matmul(int threads, const MatmulShape& shape, const void* a, const void* b,
                     void* c, void* packed_b = nullptr);

}  // namespace posenc
