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

// Rows ahead of the one being packed whose lines are asked for.
constexpr int64_t kRowsAhead = 16;

// B is read row by row as it is stored (a row of keys, or of values, at a
// time), each row once and whole: rows far apart (BTHD views, a packed qkv)
// then cost one pass over their cache lines, where tile by tile they were
// visited once per tile. T: the element's bits.
template <class T>
void pack_all(const PackedTiles& t, const MatmulShape& s, const T* b, T* packed) {
  const int64_t cols = t.cols;
  auto tile_at = [&](int64_t kt, int64_t nt) { return packed + kt * t.k_stride + nt * t.n_stride; };
  // The tiles past k or n hold zeros where B has no element.
  for (int64_t nt = 0; nt < t.n_tiles; ++nt) {
    for (int64_t kt = 0; kt < t.k_tiles; ++kt) {
      if ((kt + 1) * t.rows > s.k || (nt + 1) * cols > s.n) {
        std::fill(tile_at(kt, nt), tile_at(kt, nt) + t.rows * cols, T(0));
      }
    }
  }
  if (s.transpose_b) {
    // B(k, n) at b[n * ldb + k]: row n of the storage is column n of B,
    // column n % cols of one tile per tile of k.
    for (int64_t n = 0; n < s.n; ++n) {
      const T* from = b + n * s.ldb;
      if (n + kRowsAhead < s.n) prefetch_row(from + kRowsAhead * s.ldb, size_t(s.k) * sizeof(T));
      const int64_t nt = n / cols, c = n % cols;
      for (int64_t kt = 0; kt * t.rows < s.k; ++kt) {
        const T* run = from + kt * t.rows;
        const int64_t kr = std::min(t.rows, s.k - kt * t.rows);
        T* tile = tile_at(kt, nt);
        if (t.pair == 1) {
          for (int64_t r = 0; r < kr; ++r) tile[r * cols + c] = run[r];
        } else {
          // A pair of k is adjacent in both.
          int64_t p = 0;
          for (; 2 * p + 1 < kr; ++p)
            std::memcpy(tile + (p * cols + c) * 2, run + 2 * p, 2 * sizeof(T));
          if (2 * p < kr) tile[(p * cols + c) * 2] = run[2 * p];
        }
      }
    }
  } else {
    // Row k of B, a pair of them where k's pairs interleave.
    for (int64_t k = 0; k < s.k; k += t.pair) {
      const T* row = b + k * s.ldb;
      for (int64_t ahead = kRowsAhead; ahead < kRowsAhead + t.pair && k + ahead < s.k; ++ahead) {
        prefetch_row(row + ahead * s.ldb, size_t(s.n) * sizeof(T));
      }
      const bool second = t.pair == 2 && k + 1 < s.k;
      const int64_t kt = k / t.rows, r = k % t.rows;
      for (int64_t nt = 0; nt * cols < s.n; ++nt) {
        const int64_t n0 = nt * cols, nc = std::min(cols, s.n - n0);
        T* to = tile_at(kt, nt) + r * cols;
        if (t.pair == 1) {
          std::memcpy(to, row + n0, size_t(nc) * sizeof(T));
        } else if (second) {
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
}

}  // namespace

void pack_tiles(const PackedTiles& tiles, const MatmulShape& shape, const void* b, void* packed) {
  if (shape.ab_type == POSENC_BF16) {
    pack_all(tiles, shape, static_cast<const uint16_t*>(b), static_cast<uint16_t*>(packed));
  } else {
    pack_all(tiles, shape, static_cast<const uint32_t*>(b), static_cast<uint32_t*>(packed));
  }
}

}  // namespace posenc
