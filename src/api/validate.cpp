#include "api/validate.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "posenc/absolute.h"
#include "runtime/error.hpp"

namespace posenc {
namespace {

[[noreturn]] void fail(posenc_status status, const std::string& message) {
  throw Error(status, message);
}

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto a0 = reinterpret_cast<uintptr_t>(a);
  const auto b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + uintptr_t(b_bytes) && b0 < a0 + uintptr_t(a_bytes);
}

}  // namespace

void require_not_null(const void* pointer, const char* name) {
  if (pointer == nullptr) fail(POSENC_ERROR_NULL_POINTER, std::string(name) + " is NULL");
}

void require_positive(int64_t value, const char* name) {
  if (value < 1) {
    fail(POSENC_ERROR_INVALID_ARGUMENT,
         std::string(name) + " must be >= 1 (got " + std::to_string(value) + ")");
  }
}

void require_non_negative(int64_t value, const char* name) {
  if (value < 0) {
    fail(POSENC_ERROR_INVALID_ARGUMENT,
         std::string(name) + " must be >= 0 (got " + std::to_string(value) + ")");
  }
}

void require_frequency_base(double base, const char* name) {
  if (!std::isfinite(base) || base <= 0.0 || base == 1.0) {
    fail(POSENC_ERROR_INVALID_ARGUMENT, std::string(name) +
                                            " must be finite, > 0 and != 1 (got " +
                                            std::to_string(base) + ")");
  }
}

void require_sincos_layout(int layout, const char* name) {
  if (layout != POSENC_SINCOS_INTERLEAVED && layout != POSENC_SINCOS_SPLIT) {
    fail(POSENC_ERROR_INVALID_ARGUMENT,
         std::string(name) + ": unknown layout value " + std::to_string(layout));
  }
}

void require_dtype(int dtype, const char* name) {
  if (dtype != POSENC_F32 && dtype != POSENC_BF16) {
    fail(POSENC_ERROR_INVALID_ARGUMENT,
         std::string(name) + ": unknown dtype value " + std::to_string(dtype));
  }
}

int64_t checked_bytes(std::initializer_list<int64_t> sizes, size_t element_bytes,
                      const char* what) {
  const int64_t limit = std::numeric_limits<int64_t>::max() / int64_t(element_bytes);
  int64_t count = 1;
  for (int64_t size : sizes) {
    if (size != 0 && count > limit / size) {
      fail(POSENC_ERROR_OVERFLOW, std::string(what) + ": the size overflows");
    }
    count *= size;
  }
  return count * int64_t(element_bytes);
}

void require_disjoint(const void* a, int64_t a_bytes, const char* a_name, const void* b,
                      int64_t b_bytes, const char* b_name) {
  if (overlaps(a, a_bytes, b, b_bytes)) {
    fail(POSENC_ERROR_ALIASING,
         std::string(a_name) + " overlaps " + b_name + ", which is not allowed");
  }
}

void require_same_or_disjoint(const void* a, int64_t a_bytes, const char* a_name,
                              const void* b, int64_t b_bytes, const char* b_name) {
  if (a == b && a_bytes == b_bytes) return;
  require_disjoint(a, a_bytes, a_name, b, b_bytes, b_name);
}

}  // namespace posenc
