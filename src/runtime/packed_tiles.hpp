// B written straight into oneDNN's brgemm layouts, where oneDNN's generic
// reorder (jit:uni) is slower for all but one case (tiles_beat_reorder): the
// per-kv-head packing of the attention's keys and values.
#pragma once

#include <cstdint>
#include <optional>

#include <oneapi/dnnl/dnnl_types.h>

#include "runtime/matmul.hpp"

namespace posenc {

// A [K, N] layout of whole tiles of `rows` k by `cols` n, tile (kt, nt) at
// kt * k_stride + nt * n_stride elements, element (r, c) of a tile at
// (r / pair * cols + c) * pair + r % pair: pair 1 for fp32's tiles of rows
// (oneDNN's BA16a64b and the like), 2 for bf16's pairs of k (BA16a64b2a).
struct PackedTiles {
  int64_t rows, cols, pair;
  int64_t k_stride, n_stride;
  int64_t k_tiles, n_tiles;
};

// The tiles of `md`, or none where it is not such a layout, every byte of it
// in a tile, with pair 1 for fp32 and 2 for bf16 (the layouts brgemm asks
// for).
std::optional<PackedTiles> packed_tiles(const dnnl_memory_desc_t& md);

// Whether pack_tiles writes B of `shape` at least as fast as oneDNN's
// reorder: everywhere but fp32 keys in adjacent rows (B transposed, ldb = k),
// which the reorder transposes twice as fast in cache and as fast from memory
// (measured on Zen 4).
bool tiles_beat_reorder(const MatmulShape& shape);

// Writes B of `shape` (k x n, stored as ldb and transpose_b say; fp32 or
// bf16) into `packed` laid out as `tiles`, zeros past k and n.
void pack_tiles(const PackedTiles& tiles, const MatmulShape& shape, const void* b, void* packed);

}  // namespace posenc
