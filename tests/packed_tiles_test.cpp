// B written tile by tile into oneDNN's brgemm layouts, against oneDNN's own
// reorder into the same layout, byte for byte (padding included).
#include "runtime/packed_tiles.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory::desc blocked(int64_t k, int64_t n, dt type, tag layout) {
  return dnnl::memory::desc({k, n}, type, layout);
}

// `count` finite numbers as fp32 or bf16 bytes: oneDNN's reference reorder
// (below AVX-512) converts through fp32, which would quiet a NaN payload of
// arbitrary bits.
std::vector<uint8_t> finite_values(size_t count, posenc_dtype type) {
  const std::vector<float> values = random_floats(count, 7);
  const std::vector<uint16_t> halves = to_bf16(values);
  const auto* from = type == POSENC_F32 ? static_cast<const void*>(values.data()) : halves.data();
  std::vector<uint8_t> bytes(count * (type == POSENC_F32 ? 4 : 2));
  std::memcpy(bytes.data(), from, bytes.size());
  return bytes;
}

// The layouts' tiles worked out from oneDNN's tag names: BA16a64b is tiles of
// 16 k by 64 n, column tiles outermost; BA16a64b2a the same with pairs of k,
// 32 k a tile. Layouts of other shapes are not taken.
TEST(PackedTiles, TilesOfBrgemmLayouts) {
  struct Case {
    dt type;
    tag layout;
    PackedTiles tiles;
  };
  // [40, 130]: k padded to 48 (fp32) or 64 (bf16), n to 192.
  const Case cases[] = {{dt::f32, tag::BA16a64b, {16, 64, 1, 16 * 64, 3 * 16 * 64, 3, 3}},
                        {dt::bf16, tag::BA16a64b2a, {32, 64, 2, 32 * 64, 2 * 32 * 64, 2, 3}}};
  for (const Case& c : cases) {
    const std::optional<PackedTiles> t = packed_tiles(blocked(40, 130, c.type, c.layout).data);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->rows, c.tiles.rows);
    EXPECT_EQ(t->cols, c.tiles.cols);
    EXPECT_EQ(t->pair, c.tiles.pair);
    EXPECT_EQ(t->k_stride, c.tiles.k_stride);
    EXPECT_EQ(t->n_stride, c.tiles.n_stride);
    EXPECT_EQ(t->k_tiles, c.tiles.k_tiles);
    EXPECT_EQ(t->n_tiles, c.tiles.n_tiles);
  }
  EXPECT_FALSE(packed_tiles(blocked(40, 130, dt::f32, tag::ab).data).has_value());
  EXPECT_FALSE(packed_tiles(blocked(40, 130, dt::f32, tag::AB16b64a).data).has_value());
  EXPECT_FALSE(packed_tiles(blocked(40, 130, dt::bf16, tag::AB16b64a2b).data).has_value());
  // Tiles of elements other than fp32's singles and bf16's pairs.
  EXPECT_FALSE(packed_tiles(blocked(40, 130, dt::bf16, tag::BA16a64b).data).has_value());
  EXPECT_FALSE(packed_tiles(blocked(40, 130, dt::f32, tag::BA16a64b2a).data).has_value());
}

// B stored [k, n] or transposed, rows adjacent or ldb apart (an odd ldb puts
// bf16 rows at addresses 2 mod 4), written into each layout by pack_tiles and by
// oneDNN's reorder: the same bytes, on shapes of 1, tails of both tiles and of
// the transposed blocks (n % 8), odd k (half a pair) and many tiles.
TEST(PackedTiles, SameBytesAsOneDnnReorder) {
  struct Layout {
    dt type;
    tag layout;
  };
  const Layout layouts[] = {{dt::f32, tag::BA16a64b},
                            {dt::f32, tag::BA16a16b},
                            {dt::bf16, tag::BA16a64b2a},
                            {dt::bf16, tag::BA16a32b2a},
                            {dt::bf16, tag::BA16a48b2a}};
  const int64_t shapes[][2] = {{1, 1},   {5, 70},    {16, 64},   {17, 130},
                               {33, 64}, {100, 192}, {250, 128}, {128, 2048}};
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const Layout& l : layouts) {
    for (const auto& kn : shapes) {
      for (const auto& [transpose, gap] :
           {std::pair{false, 0}, std::pair{false, 3}, std::pair{true, 0}, std::pair{true, 3}}) {
        MatmulShape s;
        s.k = kn[0];
        s.n = kn[1];
        s.transpose_b = transpose;
        s.ldb = (transpose ? s.k : s.n) + gap;
        s.ab_type = l.type == dt::f32 ? POSENC_F32 : POSENC_BF16;
        SCOPED_TRACE("k " + std::to_string(s.k) + " n " + std::to_string(s.n) +
                     (transpose ? " transposed" : "") + " ldb " + std::to_string(s.ldb) + " tag " +
                     std::to_string(int(l.layout)));
        const std::vector<uint8_t> b =
            finite_values(size_t((transpose ? s.n : s.k) * s.ldb), s.ab_type);
        const dnnl::memory::desc to = blocked(s.k, s.n, l.type, l.layout);
        const dnnl::memory::desc from(
            {s.k, s.n}, l.type,
            transpose ? dnnl::memory::dims{1, s.ldb} : dnnl::memory::dims{s.ldb, 1});
        std::vector<uint8_t> expected(to.get_size(), 0xFF), got(to.get_size(), 0xFF);
        dnnl::memory src(from, engine, const_cast<uint8_t*>(b.data())),
            dst(to, engine, expected.data());
        dnnl::reorder(src, dst).execute(stream, src, dst);
        stream.wait();
        const std::optional<PackedTiles> tiles = packed_tiles(to.data);
        ASSERT_TRUE(tiles.has_value());
        pack_tiles(*tiles, s, b.data(), got.data());
        EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
      }
    }
  }
}

// oneDNN's reorder packs fp32 keys in adjacent rows, posenc everything else.
TEST(PackedTiles, TilesBeatReorderButForDenseFp32Keys) {
  MatmulShape s;
  s.k = 128;
  s.n = 300;
  for (posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (bool transpose : {false, true}) {
      for (int64_t gap : {0, 1}) {
        s.ab_type = type;
        s.transpose_b = transpose;
        s.ldb = (transpose ? s.k : s.n) + gap;
        EXPECT_EQ(tiles_beat_reorder(s), !(type == POSENC_F32 && transpose && gap == 0))
            << type << transpose << gap;
      }
    }
  }
}

// Where oneDNN's brgemm packs the attention's keys (transposed) and values,
// from a packed qkv's rows or from adjacent rows, pack_b writes its tiles,
// the bytes of its reorder; fp32 keys in adjacent rows it leaves to the
// reorder.
TEST(PackedTiles, PackBWritesTilesWhereBrgemmPacks) {
  for (posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (bool transpose : {false, true}) {
      for (bool adjacent : {false, true}) {
        MatmulShape s;
        s.m = 64;
        s.k = transpose ? 128 : 300;
        s.n = transpose ? 300 : 128;
        s.lda = s.k;
        s.ldc = s.n;
        s.ldb = adjacent ? (transpose ? s.k : s.n) : 3 * 4 * 128;  // a packed qkv's rows, 4 heads
        s.transpose_b = transpose;
        s.ab_type = type;
        s.b_packed = true;
        SCOPED_TRACE(std::string(type == POSENC_F32 ? "fp32" : "bf16") +
                     (transpose ? " transposed" : "") + " ldb " + std::to_string(s.ldb));
        size_t bytes = 0;
        try {
          bytes = packed_b_bytes(s);
        } catch (const std::exception&) {
          continue;  // no bf16 GEMM on this CPU
        }
        const bool brgemm = std::string(onednn_matmul_impl(type)).rfind("brg:", 0) == 0;
        const bool reorder_faster = type == POSENC_F32 && transpose && adjacent;
        EXPECT_EQ(packed_b_in_tiles(s), brgemm && bytes > 0 && !reorder_faster);
        if (!packed_b_in_tiles(s)) continue;  // oneDNN's older GEMM's layouts, or its reorder
        const std::vector<uint8_t> b = finite_values(size_t(300 * s.ldb), type);
        std::vector<uint8_t> tiles(bytes, 0xFF), reorder(bytes, 0xFF);
        pack_b(s, b.data(), tiles.data());
        pack_b_by_reorder(s, b.data(), reorder.data());
        EXPECT_EQ(std::memcmp(tiles.data(), reorder.data(), bytes), 0);
      }
    }
  }
}

}  // namespace
}  // namespace posenc::test
