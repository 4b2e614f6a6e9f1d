// Counts and byte sizes that a caller's dimensions could make overflow (a
// strided layout's zero strides leave heads and lengths unbounded by any
// tensor's extent): computed checked, posenc::Error (OVERFLOW) naming what
// overflowed where they do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.hpp"

namespace posenc {

[[noreturn]] inline void size_overflows(const char* what) {
  throw Error(POSENC_ERROR_OVERFLOW, std::string(what) + ": the size overflows");
}

inline int64_t checked_count_product(int64_t a, int64_t b, const char* what) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) size_overflows(what);
  return product;
}

inline size_t checked_size_product(size_t a, size_t b, const char* what) {
  size_t product;
  if (__builtin_mul_overflow(a, b, &product)) size_overflows(what);
  return product;
}

}  // namespace posenc
