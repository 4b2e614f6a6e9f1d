#include "runtime/parallel_matmul.hpp"

#include <algorithm>
#include <cstdint>

#include "runtime/ceil_div.hpp"
#include "runtime/dtype.hpp"
#include "runtime/error.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc {
namespace {

// Tiles of C, of every batch item: 156 for the BoTNet block's projection
// at batch 8 (12 panels, q, k and v of 4 heads, of 1568 x 128 x 512),
// enough to keep 16 threads busy. Each tile's GEMM packs its part of A and
// B again; there they ran within 3% of one GEMM (the fastest of 8 runs
// each, on 1 and 2 threads of a 2-core Zen 3, AVX2), and bands of 64 or 128
// rows at full width within 7%. On 1 thread of a 2-core Zen 5 (AVX-512,
// fp32, B transposed) they ran 12-14% slower than one GEMM, 4-6% with B
// packed once per column tile (its 0.2 ms included). oneDNN 2.6 runs its
// brgemm kernels (AMX among them) only on a dense C (ldc = n): a tile
// narrower than C's rows gets its older gemm (gemm:jit), which multiplied
// the projection's bf16 tiles at 520-620 GFLOP/s on one core of a 2-core
// Sapphire Rapids, where dense tiles of a head's 128 columns, B packed
// once, ran at 900-910.
constexpr int64_t kTileRows = 128;
constexpr int64_t kTileColumns = 256;

// The tiles of a shape: the GEMM of a tile, and where the packed B of
// each column tile of each batch item lies.
struct Tiles {
  explicit Tiles(const MatmulShape& shape)
      : shape(shape),
        row_tiles(ceil_div(shape.m, kTileRows)),
        column_tiles(ceil_div(shape.n, kTileColumns)),
        packed_items(shape.batch_stride_b == 0 ? 1 : shape.batch) {}

  // The GEMM of the tile of `rows` x `columns` of one batch item, on B
  // packed or as stored.
  MatmulShape tile(int64_t rows, int64_t columns, bool packed) const {
    MatmulShape t = shape;
    t.batch = 1;
    t.batch_stride_a = t.batch_stride_b = t.batch_stride_c = 0;
    t.m = rows;
    t.n = columns;
    t.onednn_threads = 1;
    t.b_packed = packed;
    return t;
  }
  int64_t rows_at(int64_t i) const { return std::min(kTileRows, shape.m - i); }
  int64_t columns_at(int64_t j) const { return std::min(kTileColumns, shape.n - j); }
  // B packed for the full-height tiles of the columns at j (and read by
  // the last row tile's where it serves it).
  MatmulShape packed_for(int64_t j) const { return tile(rows_at(0), columns_at(j), true); }
  // Bytes of each column tile's packed B but the last, which may be
  // narrower (or read as stored: 0 bytes).
  size_t column_stride() const { return workspace_aligned(packed_b_bytes(packed_for(0))); }
  int64_t last_columns() const { return (column_tiles - 1) * kTileColumns; }
  // Bytes of one batch item's packed B: its column tiles. A B broadcast
  // over the batch is packed once.
  size_t item_bytes() const {
    return size_t(column_tiles - 1) * column_stride() + packed_b_bytes(packed_for(last_columns()));
  }
  size_t item_stride() const { return workspace_aligned(item_bytes()); }

  MatmulShape shape;
  int64_t row_tiles, column_tiles, packed_items;
};

}  // namespace

size_t parallel_matmul_packed_b_bytes(const MatmulShape& shape) {
  const Tiles tiles(shape);
  if (shape.batch == 0 || tiles.row_tiles < 2 || tiles.column_tiles == 0 ||
      packed_b_bytes(tiles.packed_for(0)) == 0) {
    return 0;
  }
  return size_t(tiles.packed_items - 1) * tiles.item_stride() + tiles.item_bytes();
}

void parallel_matmul(int threads, const MatmulShape& shape, const void* a, const void* b, void* c,
                     void* packed_b) {
  if (shape.b_packed) throw Error(POSENC_ERROR_INTERNAL, "parallel_matmul: B is packed");
  const Tiles tiles(shape);
  const int64_t item_tiles = tiles.row_tiles * tiles.column_tiles;
  const int64_t tasks = shape.batch * item_tiles;
  if (tasks == 0) return;
  const size_t ab = dtype_bytes(shape.ab_type), cb = dtype_bytes(shape.c_type);
  // Batch item `item`'s B from its column j on: B[j] of n x k, or B[:, j].
  const auto b_at = [&](int64_t item, int64_t j) {
    const int64_t offset = item * shape.batch_stride_b + (shape.transpose_b ? j * shape.ldb : j);
    return static_cast<const char*>(b) + size_t(offset) * ab;
  };
  auto* packed = static_cast<char*>(packed_b);
  // The (at most four) tile shapes, and the GEMMs packing B, made before
  // the regions: by row tiles (all but the last, the last) and column tiles
  // (the same). A column tile's B is packed where oneDNN packs it; the last
  // row tile reads it where it serves that tile too.
  const int64_t rows[] = {tiles.rows_at(0), tiles.rows_at((tiles.row_tiles - 1) * kTileRows)};
  const int64_t columns[] = {tiles.columns_at(0), tiles.columns_at(tiles.last_columns())};
  bool packs[2] = {false, false}, reads_packed[2][2] = {{false, false}, {false, false}};
  const GemmSlots gemms(region_threads(threads, tasks));
  for (int n = 0; n < 2; ++n) {
    const MatmulShape packed_for = tiles.tile(rows[0], columns[n], true);
    packs[n] = packed != nullptr && packed_b_bytes(packed_for) > 0;
    if (packs[n]) gemms.prepare(packed_for);
    for (int m = 0; m < 2; ++m) {
      reads_packed[m][n] =
          packs[n] &&
          (m == 0 || packed_b_serves(tiles.tile(rows[m], columns[n], true), packed_for));
      gemms.prepare(tiles.tile(rows[m], columns[n], reads_packed[m][n]));
    }
  }
  const size_t column_stride = packed != nullptr ? tiles.column_stride() : 0;
  const size_t item_stride = packed != nullptr ? tiles.item_stride() : 0;
  // Column tile t of batch item `item` packed (a broadcast B's, packed
  // once, serves every item).
  const auto packed_at = [&](int64_t item, int64_t t) {
    return packed + size_t(item % tiles.packed_items) * item_stride + size_t(t) * column_stride;
  };
  if (packed != nullptr) {
    parallel_for(threads, tiles.packed_items * tiles.column_tiles, [&](int64_t task) {
      const int64_t item = task / tiles.column_tiles, t = task % tiles.column_tiles;
      const int64_t j = t * kTileColumns;
      if (packs[t == tiles.column_tiles - 1]) {
        pack_b(tiles.packed_for(j), b_at(item, j), packed_at(item, t));
      }
    });
  }
  parallel_for(threads, tasks, [&](int64_t task) {
    const int64_t item = task / item_tiles, in_item = task % item_tiles;
    const int64_t row_tile = in_item / tiles.column_tiles;
    const int64_t column_tile = in_item % tiles.column_tiles;
    const int64_t i = row_tile * kTileRows, j = column_tile * kTileColumns;
    const bool reads_packed_b = reads_packed[row_tile == tiles.row_tiles - 1 && row_tile > 0]
                                            [column_tile == tiles.column_tiles - 1];
    const MatmulShape t = tiles.tile(tiles.rows_at(i), tiles.columns_at(j), reads_packed_b);
    const int64_t a_offset = item * shape.batch_stride_a + i * shape.lda;
    const int64_t c_offset = item * shape.batch_stride_c + i * shape.ldc + j;
    matmul(t, static_cast<const char*>(a) + size_t(a_offset) * ab,
           reads_packed_b ? packed_at(item, column_tile) : b_at(item, j),
           static_cast<char*>(c) + size_t(c_offset) * cb);
  });
}

}  // namespace posenc
