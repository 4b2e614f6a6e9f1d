#include "runtime/parallel_matmul.hpp"

#include <algorithm>
#include <cstdint>

#include "runtime/ceil_div.hpp"
#include "runtime/dtype.hpp"
#include "runtime/error.hpp"
#include "runtime/parallel.hpp"

namespace posenc {
namespace {

// Tiles of C: 78 for the BoTNet block's projection at batch 8 (1568 x 1536
// x 512), enough to keep 16 threads busy. Each tile's GEMM packs its part
// of A and B again; there they ran within 3% of one GEMM (the fastest of 8
// runs each, on 1 and 2 threads of a 2-core Zen 3, AVX2), and bands of 64
// or 128 rows at full width within 7%.
constexpr int64_t kTileRows = 128;
constexpr int64_t kTileColumns = 256;

}  // namespace

void parallel_matmul(int threads, const MatmulShape& shape, const void* a, const void* b,
                     void* c) {
  if (shape.b_packed) throw Error(POSENC_ERROR_INTERNAL, "parallel_matmul: B is packed");
  const int64_t row_tiles = ceil_div(shape.m, kTileRows);
  const int64_t column_tiles = ceil_div(shape.n, kTileColumns);
  const int64_t tasks = row_tiles * column_tiles;
  if (tasks == 0) return;
  const auto tile = [&shape](int64_t rows, int64_t columns) {
    MatmulShape t = shape;
    t.m = rows;
    t.n = columns;
    t.onednn_threads = 1;
    return t;
  };
  // The (at most four) tile shapes, made before the region.
  const int64_t rows[] = {std::min(kTileRows, shape.m), shape.m - (row_tiles - 1) * kTileRows};
  const int64_t columns[] = {std::min(kTileColumns, shape.n),
                             shape.n - (column_tiles - 1) * kTileColumns};
  const GemmSlots gemms(region_threads(threads, tasks));
  for (int64_t m : rows) {
    for (int64_t n : columns) gemms.prepare(tile(m, n));
  }
  const size_t ab = dtype_bytes(shape.ab_type), cb = dtype_bytes(shape.c_type);
  parallel_for(threads, tasks, [&](int64_t task) {
    const int64_t i = task / column_tiles * kTileRows, j = task % column_tiles * kTileColumns;
    const int64_t b_offset = shape.transpose_b ? j * shape.ldb : j;  // (B[j] of n x k, or B[:, j])
    matmul(tile(std::min(kTileRows, shape.m - i), std::min(kTileColumns, shape.n - j)),
           static_cast<const char*>(a) + size_t(i * shape.lda) * ab,
           static_cast<const char*>(b) + size_t(b_offset) * ab,
           static_cast<char*>(c) + size_t(i * shape.ldc + j) * cb);
  });
}

}  // namespace posenc
