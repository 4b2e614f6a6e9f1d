#include "runtime/packed_tiles.hpp"

#include <algorithm>
#include <cstring>

#include <oneapi/dnnl/dnnl.h>

#include "runtime/prefetch.hpp"

namespace posenc {

std::optional<PackedTiles> packed_tiles(const dnnl_memory_desc_t& md) {
  if (md.format_kind != dnnl_blocked || md.ndims != 2 || md.offset0 != 0 ||
      md.extra.flags != dnnl_memory_extra_flag_none) {
    return std::nullopt;
  }
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  const bool rows_of_n =
      blocking.inner_nblks == 2 && blocking.inner_idxs[0] == 0 && blocking.inner_idxs[1] == 1;
  const bool pairs_of_k = blocking.inner_nblks == 3 && blocking.inner_idxs[0] == 0 &&
                          blocking.inner_idxs[1] == 1 && blocking.inner_idxs[2] == 0 &&
                          blocking.inner_blks[2] == 2;
  if (!rows_of_n && !pairs_of_k) return std::nullopt;
  PackedTiles t{};
  t.pair = pairs_of_k ? 2 : 1;
  // fp32 in single rows of k, bf16 in pairs: the layouts brgemm asks for.
  const bool f32_singles = md.data_type == dnnl_f32 && t.pair == 1;
  const bool bf16_pairs = md.data_type == dnnl_bf16 && t.pair == 2;
  if (!f32_singles && !bf16_pairs) return std::nullopt;
  t.rows = blocking.inner_blks[0] * t.pair;
  t.cols = blocking.inner_blks[1];
  t.k_stride = blocking.strides[0];
  t.n_stride = blocking.strides[1];
  t.k_tiles = md.padded_dims[0] / t.rows;
  t.n_tiles = md.padded_dims[1] / t.cols;
  const int64_t tile = t.rows * t.cols;
  const bool k_inner = t.k_stride == tile && t.n_stride == tile * t.k_tiles;
  const bool n_inner = t.n_stride == tile && t.k_stride == tile * t.n_tiles;
  const int64_t elements = t.k_tiles * t.n_tiles * tile;
  if (!(k_inner || n_inner) || md.padded_dims[0] != t.k_tiles * t.rows ||
      md.padded_dims[1] != t.n_tiles * t.cols ||
      dnnl_memory_desc_get_size(&md) != size_t(elements) * dnnl_data_type_size(md.data_type)) {
    return std::nullopt;
  }
  return t;
}

namespace {

// Stored rows ahead of those being packed whose lines are asked for.
constexpr int64_t kRowsAhead = 16;

// B stored [k, n]: row k (a pair of rows where k's pairs interleave) into
// row k % rows of its tiles, each stored row read once, whole.
template <class T>
void pack_rows(const PackedTiles& t, const MatmulShape& s, const T* b, T* packed) {
  for (int64_t k = 0; k < s.k; k += t.pair) {
    const T* row = b + k * s.ldb;
    for (int64_t ahead = kRowsAhead; ahead < kRowsAhead + t.pair && k + ahead < s.k; ++ahead) {
      // (Rows far apart defeat the hardware's prefetchers, and a kv
      // head's rows come from L3 or memory.)
      prefetch_bytes(row + ahead * s.ldb, s.n * int64_t(sizeof(T)));
    }
    T* tile_row = packed + k / t.rows * t.k_stride + k % t.rows * t.cols;
    for (int64_t nt = 0; nt * t.cols < s.n; ++nt) {
      const int64_t n0 = nt * t.cols, nc = std::min(t.cols, s.n - n0);
      T* to = tile_row + nt * t.n_stride;
      if (t.pair == 1) {
        std::memcpy(to, row + n0, size_t(nc) * sizeof(T));
      } else if (k + 1 < s.k) {
        for (int64_t c = 0; c < nc; ++c) {
          to[2 * c] = row[n0 + c];
          to[2 * c + 1] = row[s.ldb + n0 + c];
        }
      } else {
        for (int64_t c = 0; c < nc; ++c) to[2 * c] = row[n0 + c];
      }
    }
  }
}

// A transposed B (the keys: B(k, n) at b[n * ldb + k], a stored row is a
// column of B) moves in units of 4 bytes, an fp32 or bf16's pair of k, which
// is adjacent in a stored row as in a tile. Units go by memcpy: a bf16 row
// may start at any even address, and the tiles hold bf16 elements.
constexpr int64_t kUnitBytes = 4;

// Stored rows transposed together, and units taken from each: a block of
// kStoredRows x kUnitsPerRow units goes through registers, read along the
// stored rows and written along the tiles' rows (the fastest sizes tried).
constexpr int64_t kStoredRows = 8, kUnitsPerRow = 4;

// Units [0, units) of `count` stored rows (ld_bytes apart from `from`) into
// columns [0, count) of a tile's rows: unit (u, j) at (u * cols + j) units
// from `tile`.
void transpose_into_tile(const char* from, int64_t ld_bytes, int64_t count, int64_t units,
                         char* tile, int64_t cols) {
  auto unit_of = [&](int64_t j, int64_t u) { return from + j * ld_bytes + u * kUnitBytes; };
  auto unit_at = [&](int64_t u, int64_t j) { return tile + (u * cols + j) * kUnitBytes; };
  int64_t u = 0;
  if (count == kStoredRows) {
    for (; u + kUnitsPerRow <= units; u += kUnitsPerRow) {
      uint32_t block[kStoredRows][kUnitsPerRow];
      for (int64_t j = 0; j < kStoredRows; ++j) {
        for (int64_t i = 0; i < kUnitsPerRow; ++i) {
          std::memcpy(&block[j][i], unit_of(j, u + i), kUnitBytes);
        }
      }
      for (int64_t i = 0; i < kUnitsPerRow; ++i) {
        for (int64_t j = 0; j < kStoredRows; ++j) {
          std::memcpy(unit_at(u + i, j), &block[j][i], kUnitBytes);
        }
      }
    }
  }
  for (; u < units; ++u) {
    for (int64_t j = 0; j < count; ++j) std::memcpy(unit_at(u, j), unit_of(j, u), kUnitBytes);
  }
}

// B stored transposed: stored rows (columns of B) kStoredRows at a time,
// within one tile column, transposed unit by unit into every tile of k; with
// pairs of k, an odd k's last element alone.
template <class T>
void pack_columns(const PackedTiles& t, const MatmulShape& s, const T* b, T* packed) {
  const int64_t unit_rows = t.rows / t.pair, units = s.k / t.pair;
  const int64_t ld_bytes = s.ldb * int64_t(sizeof(T));
  for (int64_t nt = 0; nt * t.cols < s.n; ++nt) {
    const int64_t nc = std::min(t.cols, s.n - nt * t.cols);
    for (int64_t c = 0; c < nc; c += kStoredRows) {
      const int64_t n0 = nt * t.cols + c, count = std::min(kStoredRows, nc - c);
      const T* stored = b + n0 * s.ldb;
      for (int64_t j = kRowsAhead; j < kRowsAhead + count && n0 + j < s.n; ++j) {
        prefetch_bytes(stored + j * s.ldb, s.k * int64_t(sizeof(T)));
      }
      for (int64_t u0 = 0; u0 < units; u0 += unit_rows) {
        T* tile = packed + u0 / unit_rows * t.k_stride + nt * t.n_stride;
        transpose_into_tile(reinterpret_cast<const char*>(stored) + u0 * kUnitBytes, ld_bytes,
                            count, std::min(unit_rows, units - u0),
                            reinterpret_cast<char*>(tile) + c * kUnitBytes, t.cols);
      }
      if (s.k % t.pair != 0) {
        const int64_t k = s.k - 1;  // the first of a pair: element (k % rows, c + j)
        T* tile = packed + k / t.rows * t.k_stride + nt * t.n_stride;
        for (int64_t j = 0; j < count; ++j) {
          tile[(k % t.rows / 2 * t.cols + c + j) * 2] = stored[j * s.ldb + k];
        }
      }
    }
  }
}

// The tiles past k or n hold zeros where B has no element.
template <class T>
void zero_partial_tiles(const PackedTiles& t, const MatmulShape& s, T* packed) {
  for (int64_t nt = 0; nt < t.n_tiles; ++nt) {
    for (int64_t kt = 0; kt < t.k_tiles; ++kt) {
      if ((kt + 1) * t.rows > s.k || (nt + 1) * t.cols > s.n) {
        T* tile = packed + kt * t.k_stride + nt * t.n_stride;
        std::fill(tile, tile + t.rows * t.cols, T(0));
      }
    }
  }
}

// T: the element's bits.
template <class T>
void pack_all(const PackedTiles& t, const MatmulShape& s, const T* b, T* packed) {
  zero_partial_tiles(t, s, packed);
  if (s.transpose_b) {
    pack_columns(t, s, b, packed);
  } else {
    pack_rows(t, s, b, packed);
  }
}

}  // namespace

bool tiles_beat_reorder(const MatmulShape& shape) {
  return !(shape.ab_type == POSENC_F32 && shape.transpose_b && shape.ldb == shape.k);
}

void pack_tiles(const PackedTiles& tiles, const MatmulShape& shape, const void* b, void* packed) {
  if (shape.ab_type == POSENC_BF16) {
    pack_all(tiles, shape, static_cast<const uint16_t*>(b), static_cast<uint16_t*>(packed));
  } else {
    pack_all(tiles, shape, static_cast<const uint32_t*>(b), static_cast<uint32_t*>(packed));
  }
}

}  // namespace posenc
