// Drawing call arguments from the fuzzer's bytes. A size is either valid and
// small (so that buffers can be allocated to match it) or one of the invalid
// values the API must reject; the caller learns which.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

namespace posenc::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t byte() {
    if (used_ == size_) return 0;
    return data_[used_++];
  }

  bool flag() { return (byte() & 1) != 0; }

  // One of [0, count).
  int choice(int count) { return byte() % count; }

  // A size in [1, max] most of the time; otherwise one no call can accept
  // (zero, negative, or so large that its byte count overflows int64 even
  // for 2-byte elements), counted in `invalid`.
  int64_t size(int64_t max, int& invalid) {
    const uint8_t b = byte();
    if (b < 232) return 1 + int64_t(b) % max;
    ++invalid;
    static constexpr int64_t bad[] = {0, -1, -7, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max(),
                                      (int64_t(1) << 62) + 1, int64_t(1) << 62,
                                      -(int64_t(1) << 33)};
    return bad[b % 8];
  }

  // A count axis (batches, heads, tokens, rows), which may be 0: 0 one time
  // in 16, else as size(max), whose 0 is valid here too.
  int64_t count(int64_t max, int& invalid) {
    if (choice(16) == 0) return 0;
    int bad = 0;
    const int64_t value = size(max, bad);
    if (value != 0) invalid += bad;
    return value;
  }

  // A key map's sides (its width 0 when height_only), each a size(max):
  // 0 x 0 names the query map and is valid; one 0 alone, or a side no call
  // accepts, is counted in `invalid`.
  std::pair<int64_t, int64_t> key_map(int64_t max, bool height_only, int& invalid) {
    int bad = 0;  // counts zeros too
    const int64_t height = size(max, bad), width = height_only ? 0 : size(max, bad);
    if ((height != 0 || width != 0) && (bad > 0 || height == 0 || width == 0)) ++invalid;
    return {height, width};
  }

  // A double for a base or scale, sometimes NaN, Inf, zero or negative.
  double real(double typical) {
    switch (byte() % 12) {
      case 0: ++invalid_reals_; return std::numeric_limits<double>::quiet_NaN();
      case 1: ++invalid_reals_; return std::numeric_limits<double>::infinity();
      case 2: ++invalid_reals_; return 0.0;
      case 3: ++invalid_reals_; return -typical;
      default: return typical * (1.0 + double(byte()) / 64.0);
    }
  }
  int invalid_reals() const { return invalid_reals_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t used_ = 0;
  int invalid_reals_ = 0;
};

}  // namespace posenc::fuzz
