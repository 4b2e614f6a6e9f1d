#include "runtime/packed_tiles.hpp"

#include <algorithm>
#include <cstring>

#include <oneapi/dnnl/dnnl.h>

namespace posenc {

std::optional<PackedTiles> packed_tiles(const dnnl_memory_desc_t& md, size_t element_bytes) {
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
  // Elements in units of 4 bytes: an fp32, or bf16's pair of k.
  if (t.pair * element_bytes != 4) return std::nullopt;
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
      dnnl_memory_desc_get_size(&md) != size_t(elements) * element_bytes) {
    return std::nullopt;
  }
  return t;
}

namespace {

// Asks for the cache lines of `bytes` at p: rows far apart defeat the
// hardware's prefetchers, and a kv head's rows come from L3 or memory.
inline void prefetch_row(const void* p, size_t bytes) {
  const char* at = static_cast<const char*>(p);
  for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(at + line);
}

// Stored rows ahead of those being packed whose lines are asked for.
constexpr int64_t kRowsAhead = 16;

// B stored [k, n]: row k (a pair of rows where k's pairs interleave) into
// row k % rows of its tiles, each stored row read once, whole.
template <class T>
void pack_rows(const PackedTiles& t, const MatmulShape& s, const T* b, T* packed) {
  for (int64_t k = 0; k < s.k; k += t.pair) {
    const T* row = b + k * s.ldb;
    for (int64_t ahead = kRowsAhead; ahead < kRowsAhead + t.pair && k + ahead < s.k; ++ahead) {
      prefetch_row(row + ahead * s.ldb, size_t(s.n) * sizeof(T));
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

// A transposed B's element, or pair of k, as one 4-byte unit: B(k, n) is at
// b[n * ldb + k], so a stored row is a column of B, and a pair of k is
// adjacent there as in a tile. Loaded by memcpy, since a bf16 row may start
// at any even address; stored through a type that may alias the tiles' bf16
// elements (a GCC and Clang attribute).
using Unit = uint32_t;
using TileUnit = uint32_t __attribute__((may_alias));
static_assert(sizeof(Unit) == sizeof(float) && sizeof(Unit) == 2 * sizeof(uint16_t));

inline Unit load_unit(const char* p) {
  Unit u;
  std::memcpy(&u, p, sizeof u);
  return u;
}

// Stored rows transposed together, and units of each moved together: a
// block of kGroup x kBlock units goes through registers, read along the
// stored rows and written along the tiles' rows (the fastest sizes tried).
constexpr int64_t kGroup = 8, kBlock = 4;

// Units [0, units) of `group` stored rows (ld_bytes apart from `from`) into
// columns [0, group) of a tile's rows (unit (u, j) at u * cols + j).
void transpose_into_tile(const char* from, int64_t ld_bytes, int64_t group, int64_t units,
                         TileUnit* tile, int64_t cols) {
  constexpr int64_t kUnit = sizeof(Unit);
  int64_t u = 0;
  if (group == kGroup) {
    for (; u + kBlock <= units; u += kBlock) {
      Unit block[kGroup][kBlock];
      for (int64_t j = 0; j < kGroup; ++j) {
        for (int64_t i = 0; i < kBlock; ++i) {
          block[j][i] = load_unit(from + j * ld_bytes + (u + i) * kUnit);
        }
      }
      for (int64_t i = 0; i < kBlock; ++i) {
        for (int64_t j = 0; j < kGroup; ++j) tile[(u + i) * cols + j] = block[j][i];
      }
    }
  }
  for (; u < units; ++u) {
    for (int64_t j = 0; j < group; ++j) {
      tile[u * cols + j] = load_unit(from + j * ld_bytes + u * kUnit);
    }
  }
}

// B stored transposed: stored rows (columns of B) kGroup at a time, within
// one tile column, transposed unit by unit into every tile of k; with pairs
// of k, an odd k's last element alone.
template <class T>
void pack_columns(const PackedTiles& t, const MatmulShape& s, const T* b, T* packed) {
  const int64_t unit_rows = t.rows / t.pair, units = s.k / t.pair;
  const int64_t ld_bytes = s.ldb * int64_t(sizeof(T));
  for (int64_t nt = 0; nt * t.cols < s.n; ++nt) {
    const int64_t nc = std::min(t.cols, s.n - nt * t.cols);
    for (int64_t c = 0; c < nc; c += kGroup) {
      const int64_t n0 = nt * t.cols + c, group = std::min(kGroup, nc - c);
      const T* rows = b + n0 * s.ldb;
      for (int64_t j = kRowsAhead; j < kRowsAhead + group && n0 + j < s.n; ++j) {
        prefetch_row(rows + j * s.ldb, size_t(s.k) * sizeof(T));
      }
      for (int64_t u0 = 0; u0 < units; u0 += unit_rows) {
        T* tile = packed + u0 / unit_rows * t.k_stride + nt * t.n_stride;
        transpose_into_tile(reinterpret_cast<const char*>(rows) + u0 * int64_t(sizeof(Unit)),
                            ld_bytes, group, std::min(unit_rows, units - u0),
                            reinterpret_cast<TileUnit*>(tile) + c, t.cols);
      }
      if (s.k % t.pair != 0) {
        const int64_t k = s.k - 1;  // the first of a pair: element (k % rows, c) of its tile
        T* tile = packed + k / t.rows * t.k_stride + nt * t.n_stride;
        for (int64_t j = 0; j < group; ++j) {
          tile[(k % t.rows / 2 * t.cols + c + j) * 2] = rows[j * s.ldb + k];
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

bool tiles_beat_reorder(const PackedTiles& tiles, const MatmulShape& shape) {
  return !(shape.transpose_b && tiles.pair == 1 && shape.ldb == shape.k);
}

void pack_tiles(const PackedTiles& tiles, const MatmulShape& shape, const void* b, void* packed) {
  if (shape.ab_type == POSENC_BF16) {
    pack_all(tiles, shape, static_cast<const uint16_t*>(b), static_cast<uint16_t*>(packed));
  } else {
    pack_all(tiles, shape, static_cast<const uint32_t*>(b), static_cast<uint32_t*>(packed));
  }
}

}  // namespace posenc
