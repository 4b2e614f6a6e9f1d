// The transposes of 4- and 2-byte elements (the bottleneck block's NCHW <->
// token-major copies) on every ISA path, against element-by-element copies:
// sides of 0, below, at and across every register tile (4, 8, 16) and band
// of 64 rows with tails, prime and non-square sizes, the block's own 512 x 196,
// strides wider than a row, values that differ in their high bits too (NaN and
// infinity patterns pass as bits), and nothing written before or past the rows
// and columns asked for (reads outside src show under the sanitizer build).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "isa_test.hpp"
#include "runtime/kernel_registry.hpp"

namespace posenc::test {
namespace {

constexpr int64_t kSides[] = {0, 1, 3, 4, 5, 8, 9, 15, 16, 17, 23, 33, 40, 64, 65, 100};

class Transpose : public IsaTest {
 protected:
  // Transposes src [rows, cols] (rows ld_src apart) with the path's kernel
  // for T into a dst of rows ld_dst apart, prefilled with a guard, and checks
  // every element: dst[c][r] = src[r][c] bit for bit, the guard elsewhere.
  template <class T>
  void check(int64_t rows, int64_t cols, int64_t ld_src, int64_t ld_dst) const {
    SCOPED_TRACE(testing::Message() << sizeof(T) << " bytes, rows " << rows << " cols " << cols
                                    << " ld_src " << ld_src << " ld_dst " << ld_dst);
    // Distinct patterns in every element (a multiplicative hash of its
    // index), never the guard or the padding, which marks the columns past
    // cols and must not appear in dst.
    std::vector<T> src(size_t(rows * ld_src));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < ld_src; ++c) {
        T value = T(uint32_t(r * ld_src + c) * 2654435761u);
        if (value == kGuard<T> || value == kPadding<T>) value ^= 1;
        src[size_t(r * ld_src + c)] = c < cols ? value : kPadding<T>;
      }
    }
    // A guard row before dst and one past it: nothing outside may be written.
    std::vector<T> buffer(size_t((cols + 2) * ld_dst), kGuard<T>);
    T* dst = buffer.data() + ld_dst;
    transpose(src.data(), rows, cols, ld_src, dst, ld_dst);
    int64_t wrong = 0;
    for (int64_t c = -1; c <= cols; ++c) {
      for (int64_t r = 0; r < ld_dst; ++r) {
        const bool written = c >= 0 && c < cols && r < rows;
        const T want = written ? src[size_t(r * ld_src + c)] : kGuard<T>;
        const T got = dst[c * ld_dst + r];
        if (got != want && wrong++ < 5) {
          ADD_FAILURE() << "dst[" << c << "][" << r << "] = " << uint64_t(got) << ", want "
                        << uint64_t(want);
        }
      }
    }
    EXPECT_EQ(wrong, 0);
  }

 private:
  template <class T>
  static constexpr T kPadding = T(0xdeadbeefu);
  template <class T>
  static constexpr T kGuard = T(0x5a5a5a5au);

  void transpose(const uint32_t* src, int64_t rows, int64_t cols, int64_t ld_src, uint32_t* dst,
                 int64_t ld_dst) const {
    kernels().attention.transpose_32(src, rows, cols, ld_src, dst, ld_dst);
  }
  void transpose(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld_src, uint16_t* dst,
                 int64_t ld_dst) const {
    kernels().attention.transpose_16(src, rows, cols, ld_src, dst, ld_dst);
  }
};

TEST_P(Transpose, MatchesElementCopiesAcrossTiles) {
  for (int64_t rows : kSides) {
    for (int64_t cols : kSides) {
      check<uint32_t>(rows, cols, cols, rows);
      check<uint16_t>(rows, cols, cols, rows);
    }
  }
}

TEST_P(Transpose, StridesWiderThanARow) {
  for (int64_t rows : {0, 1, 7, 16, 33}) {
    for (int64_t cols : {0, 1, 8, 17, 32}) {
      check<uint32_t>(rows, cols, cols + 3, rows + 5);
      check<uint16_t>(rows, cols, cols + 5, rows + 3);
    }
  }
}

// The bottleneck block's transposes of a C512 14 x 14 map, both ways, in its
// bands of 64 rows and whole.
TEST_P(Transpose, TheBlocksMaps) {
  for (int64_t rows : {64, 512}) {
    check<uint32_t>(rows, 196, 196, 512);
    check<uint16_t>(rows, 196, 196, 512);
  }
  check<uint32_t>(196, 512, 512, 196);
  check<uint16_t>(196, 512, 512, 196);
}

}  // namespace

POSENC_INSTANTIATE_ISA_TESTS(Transpose);

}  // namespace posenc::test
