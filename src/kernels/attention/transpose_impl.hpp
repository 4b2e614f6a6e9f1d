// Transposes dst[c * ld_dst + r] = src[r * ld_src + c] of 4- and 2-byte
// elements (the bottleneck block's NCHW <-> token-major copies), templated on
// the xsimd arch: square tiles through registers, moved bit for bit by
// unpacks and permutes, and the edges past the last whole tile element by
// element. Tiles of 4 bytes: 16 x 16 in 512-bit registers (AVX-512), 8 x 8 in
// 256-bit ones (AVX2), 4 x 4 in 128-bit ones (SSE2, NEON); of 2 bytes: 8 x 8
// in 128-bit registers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace posenc::kernels {
namespace transpose_detail {

#if XSIMD_WITH_SSE2
template <class Arch>
void tile_4x4_32(const uint32_t* src, int64_t ld_src, uint32_t* dst, int64_t ld_dst) {
  const auto row = [&](int64_t r) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + r * ld_src));
  };
  const __m128i r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
  // Pairs of rows interleaved ((a0 b0 a1 b1), ...), then pairs of pairs.
  const __m128i ab01 = _mm_unpacklo_epi32(r0, r1), ab23 = _mm_unpackhi_epi32(r0, r1);
  const __m128i cd01 = _mm_unpacklo_epi32(r2, r3), cd23 = _mm_unpackhi_epi32(r2, r3);
  const __m128i cols[4] = {_mm_unpacklo_epi64(ab01, cd01), _mm_unpackhi_epi64(ab01, cd01),
                           _mm_unpacklo_epi64(ab23, cd23), _mm_unpackhi_epi64(ab23, cd23)};
  for (int64_t c = 0; c < 4; ++c) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + c * ld_dst), cols[c]);
  }
}

template <class Arch>
void tile_8x8_16(const uint16_t* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst) {
  __m128i r[8];
  for (int64_t i = 0; i < 8; ++i) {
    r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * ld_src));
  }
  // Interleaved by 2, 4 and 8 bytes: after the last step, register c holds
  // column c of the 8 rows.
  __m128i pairs[8], quads[8];
  for (int64_t i = 0; i < 4; ++i) {
    pairs[i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);      // columns 0-3
    pairs[i + 4] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);  // columns 4-7
  }
  for (int64_t h = 0; h < 8; h += 4) {  // each half of the columns
    for (int64_t i = 0; i < 2; ++i) {
      quads[h + i] = _mm_unpacklo_epi32(pairs[h + 2 * i], pairs[h + 2 * i + 1]);
      quads[h + i + 2] = _mm_unpackhi_epi32(pairs[h + 2 * i], pairs[h + 2 * i + 1]);
    }
  }
  // quads[h + j] (j < 4) holds columns h + 2 (j / 2) + {0, 1} of rows 4 (j % 2)
  // to 4 (j % 2) + 3.
  for (int64_t h = 0; h < 8; h += 4) {
    for (int64_t j = 0; j < 2; ++j) {
      const __m128i top = quads[h + 2 * j], bottom = quads[h + 2 * j + 1];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (h + 2 * j) * ld_dst),
                       _mm_unpacklo_epi64(top, bottom));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (h + 2 * j + 1) * ld_dst),
                       _mm_unpackhi_epi64(top, bottom));
    }
  }
}
#endif

#if XSIMD_WITH_AVX2
template <class Arch>
void tile_8x8_32(const uint32_t* src, int64_t ld_src, uint32_t* dst, int64_t ld_dst) {
  __m256i r[8];
  for (int64_t i = 0; i < 8; ++i) {
    r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * ld_src));
  }
  // Within each 128-bit half (columns 0-3, 4-7) as tile_4x4_32 does, then the
  // halves of rows 0-3 and 4-7 exchanged.
  __m256i pairs[8], quads[8];
  for (int64_t i = 0; i < 4; ++i) {
    pairs[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    pairs[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int64_t g = 0; g < 8; g += 4) {  // rows 0-3, rows 4-7
    quads[g] = _mm256_unpacklo_epi64(pairs[g], pairs[g + 2]);
    quads[g + 1] = _mm256_unpackhi_epi64(pairs[g], pairs[g + 2]);
    quads[g + 2] = _mm256_unpacklo_epi64(pairs[g + 1], pairs[g + 3]);
    quads[g + 3] = _mm256_unpackhi_epi64(pairs[g + 1], pairs[g + 3]);
  }
  // quads[g + c] holds columns c and c + 4 of the rows of g.
  for (int64_t c = 0; c < 4; ++c) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c * ld_dst),
                        _mm256_permute2x128_si256(quads[c], quads[c + 4], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (c + 4) * ld_dst),
                        _mm256_permute2x128_si256(quads[c], quads[c + 4], 0x31));
  }
}
#endif

#if XSIMD_WITH_AVX512F
template <class Arch>
void tile_16x16_32(const uint32_t* src, int64_t ld_src, uint32_t* dst, int64_t ld_dst) {
  __m512i r[16];
  for (int64_t i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * ld_src);
  // As tile_8x8_32 within each 128-bit lane L: quads[g + j] lane L holds
  // column 4L + j of rows g to g + 3.
  __m512i pairs[16], quads[16];
  for (int64_t i = 0; i < 8; ++i) {
    pairs[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    pairs[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int64_t g = 0; g < 16; g += 4) {
    quads[g] = _mm512_unpacklo_epi64(pairs[g], pairs[g + 2]);
    quads[g + 1] = _mm512_unpackhi_epi64(pairs[g], pairs[g + 2]);
    quads[g + 2] = _mm512_unpacklo_epi64(pairs[g + 1], pairs[g + 3]);
    quads[g + 3] = _mm512_unpackhi_epi64(pairs[g + 1], pairs[g + 3]);
  }
  // Lanes gathered across the four groups of rows: top takes lanes 2h and
  // 2h + 1 of rows 0-3 and 4-7 (quads[j], quads[4 + j]; 0x44: lanes {0, 1} of
  // each source, 0xEE: {2, 3}), bottom those of rows 8-11 and 12-15; then 0x88
  // (lanes {0, 2} of each) gives lane 2h of all four, column 8h + j, and 0xDD
  // lane 2h + 1, column 8h + j + 4.
  for (int64_t j = 0; j < 4; ++j) {
    for (int64_t h = 0; h < 2; ++h) {
      const __m512i top = h ? _mm512_shuffle_i32x4(quads[j], quads[4 + j], 0xEE)
                            : _mm512_shuffle_i32x4(quads[j], quads[4 + j], 0x44);
      const __m512i bottom = h ? _mm512_shuffle_i32x4(quads[8 + j], quads[12 + j], 0xEE)
                               : _mm512_shuffle_i32x4(quads[8 + j], quads[12 + j], 0x44);
      const int64_t c = 8 * h + j;
      _mm512_storeu_si512(dst + c * ld_dst, _mm512_shuffle_i32x4(top, bottom, 0x88));
      _mm512_storeu_si512(dst + (c + 4) * ld_dst, _mm512_shuffle_i32x4(top, bottom, 0xDD));
    }
  }
}
#endif

#if XSIMD_WITH_NEON
template <class Arch>
void tile_4x4_32(const uint32_t* src, int64_t ld_src, uint32_t* dst, int64_t ld_dst) {
  // vtrnq pairs rows: (a0 b0 a2 b2) and (a1 b1 a3 b3); halves of two such
  // give the columns.
  const uint32x4x2_t ab = vtrnq_u32(vld1q_u32(src), vld1q_u32(src + ld_src));
  const uint32x4x2_t cd = vtrnq_u32(vld1q_u32(src + 2 * ld_src), vld1q_u32(src + 3 * ld_src));
  for (int64_t odd = 0; odd < 2; ++odd) {
    vst1q_u32(dst + odd * ld_dst,
              vcombine_u32(vget_low_u32(ab.val[odd]), vget_low_u32(cd.val[odd])));
    vst1q_u32(dst + (odd + 2) * ld_dst,
              vcombine_u32(vget_high_u32(ab.val[odd]), vget_high_u32(cd.val[odd])));
  }
}

template <class Arch>
void tile_8x8_16(const uint16_t* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst) {
  // By 2 bytes: 32-bit element j of pairs[i].val[odd] holds column 2j + odd
  // of rows 2i, 2i + 1.
  uint16x8x2_t pairs[4];
  for (int64_t i = 0; i < 4; ++i) {
    pairs[i] = vtrnq_u16(vld1q_u16(src + 2 * i * ld_src), vld1q_u16(src + (2 * i + 1) * ld_src));
  }
  // By 4 bytes: quads[g][odd].val[k] holds columns {0, 4} + 2k + odd of the
  // four rows of g (rows 0-3, 4-7), one per 64-bit half.
  uint32x4x2_t quads[2][2];
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t odd = 0; odd < 2; ++odd) {
      quads[g][odd] = vtrnq_u32(vreinterpretq_u32_u16(pairs[2 * g].val[odd]),
                                vreinterpretq_u32_u16(pairs[2 * g + 1].val[odd]));
    }
  }
  for (int64_t k = 0; k < 2; ++k) {
    for (int64_t odd = 0; odd < 2; ++odd) {
      const uint32x4_t top = quads[0][odd].val[k], bottom = quads[1][odd].val[k];
      const int64_t c = 2 * k + odd;
      vst1q_u16(dst + c * ld_dst,
                vreinterpretq_u16_u32(vcombine_u32(vget_low_u32(top), vget_low_u32(bottom))));
      vst1q_u16(dst + (c + 4) * ld_dst,
                vreinterpretq_u16_u32(vcombine_u32(vget_high_u32(top), vget_high_u32(bottom))));
    }
  }
}
#endif

// Whole side x side tiles by `tile`, the rest element by element, in bands
// of 64 rows, each band a column of tiles at a time: every row of dst gets
// the band's run of it (64 elements, whole lines but at the band's ends)
// before the next row starts. Row by row, a line of dst (where dst's rows
// do not start on a line, or a tile is narrower than one) waited for the
// next row of tiles, a sweep over every column later, and could be evicted
// half written. A line of src narrower tiles read in parts is read again
// where the band's rows fall on few cache sets (rows a power of two apart,
// as the block's 512 channels): SSE2's 4 x 4 tiles ran 1.1-1.15x slower
// that way, everything else faster (docs/design.md). The block hands each
// call a band already (transpose_batch).
template <int64_t side, auto tile, class T>
void transpose_by_tiles(const T* src, int64_t rows, int64_t cols, int64_t ld_src, T* dst,
                        int64_t ld_dst) {
  constexpr int64_t band = 64;
  static_assert(band % side == 0, "a band is whole tiles");
  const int64_t tiled_rows = rows - rows % side, tiled_cols = cols - cols % side;
  for (int64_t r0 = 0; r0 < tiled_rows; r0 += band) {
    const int64_t r1 = std::min(tiled_rows, r0 + band);
    for (int64_t c = 0; c < tiled_cols; c += side) {
      for (int64_t r = r0; r < r1; r += side) {
        tile(src + r * ld_src + c, ld_src, dst + c * ld_dst + r, ld_dst);
      }
    }
    for (int64_t c = tiled_cols; c < cols; ++c) {
      for (int64_t r = r0; r < r1; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
    }
  }
  for (int64_t r = tiled_rows; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
  }
}

}  // namespace transpose_detail

template <class Arch>
void transpose_32(const uint32_t* src, int64_t rows, int64_t cols, int64_t ld_src, uint32_t* dst,
                  int64_t ld_dst) {
  using namespace transpose_detail;
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
    transpose_by_tiles<16, &tile_16x16_32<Arch>>(src, rows, cols, ld_src, dst, ld_dst);
  } else
#endif
#if XSIMD_WITH_AVX2
  if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
    transpose_by_tiles<8, &tile_8x8_32<Arch>>(src, rows, cols, ld_src, dst, ld_dst);
  } else
#endif
  {
#if !XSIMD_WITH_SSE2 && !XSIMD_WITH_NEON
#error "a transpose tile for this ISA is missing"
#endif
    transpose_by_tiles<4, &tile_4x4_32<Arch>>(src, rows, cols, ld_src, dst, ld_dst);
  }
}

template <class Arch>
void transpose_16(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld_src, uint16_t* dst,
                  int64_t ld_dst) {
  using namespace transpose_detail;
  transpose_by_tiles<8, &tile_8x8_16<Arch>>(src, rows, cols, ld_src, dst, ld_dst);
}

}  // namespace posenc::kernels
