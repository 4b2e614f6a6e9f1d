#include "api/validate.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "runtime/checked_size.hpp"
#include "runtime/error.hpp"

namespace posenc {
namespace {

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a);
  const auto b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + uintptr_t(b_bytes) && b0 < a0 + uintptr_t(a_bytes);
}

}  // namespace

void fail(posenc_status status, const std::string& message) { throw Error(status, message); }

void invalid(const std::string& message) { fail(POSENC_ERROR_INVALID_ARGUMENT, message); }

void require_not_null(const void* pointer, const char* name) {
  if (pointer == nullptr) fail(POSENC_ERROR_NULL_POINTER, std::string(name) + " is NULL");
}

void require_null(const void* pointer, const char* name, const char* why) {
  if (pointer != nullptr) invalid(std::string(name) + " must be NULL " + why);
}

void require_positive(int64_t value, const char* name) {
  if (value < 1) {
    invalid(std::string(name) + " must be >= 1 (got " + std::to_string(value) + ")");
  }
}

void require_non_negative(int64_t value, const char* name) {
  if (value < 0) {
    invalid(std::string(name) + " must be >= 0 (got " + std::to_string(value) + ")");
  }
}

void require_flag(int value, const char* name) {
  if (value != 0 && value != 1) {
    invalid(std::string(name) + " must be 0 or 1 (got " + std::to_string(value) + ")");
  }
}

void require_finite(double value, const char* name) {
  if (!std::isfinite(value)) invalid(std::string(name) + " must be finite");
}

std::string real_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void require_above(double value, double bound, const char* name, const char* bound_text) {
  if (!std::isfinite(value) || !(value > bound)) {
    invalid(std::string(name) + " must be finite and > " + bound_text + " (got " +
            real_text(value) + ")");
  }
}

void require_at_least(double value, double bound, const char* name, const char* bound_text) {
  if (!std::isfinite(value) || !(value >= bound)) {
    invalid(std::string(name) + " must be finite and >= " + bound_text + " (got " +
            real_text(value) + ")");
  }
}

void require_position_offset(int64_t value, const char* name) {
  if (value < -kMaxPositionOffset || value > kMaxPositionOffset) {
    invalid(std::string(name) + " must be within +-2^40 (got " + std::to_string(value) + ")");
  }
}

void require_max_distance(int64_t value, const char* name) {
  if (value < 0 || value > kMaxPositionOffset) {
    invalid(std::string(name) + " must be in [0, 2^40] (got " + std::to_string(value) + ")");
  }
}

bool is_frequency_base(double base) {
  return std::isfinite(base) && base >= 0x1p-64 && base != 1.0;
}

void require_frequency_base(double base, const char* name) {
  if (!is_frequency_base(base)) {
    invalid(std::string(name) + " must be finite, >= 2^-64 and != 1 (got " + real_text(base) +
            ")");
  }
}

void require_tensor(const void* pointer, size_t element_bytes, const char* name) {
  require_not_null(pointer, name);
  if (reinterpret_cast<uintptr_t>(pointer) % element_bytes != 0) {
    invalid(std::string(name) + " must be aligned to its element size (" +
            std::to_string(element_bytes) + " bytes)");
  }
}

void require_tensor_or_empty(const void* pointer, size_t element_bytes, int64_t bytes,
                             const char* name) {
  if (pointer == nullptr && bytes == 0) return;
  require_tensor(pointer, element_bytes, name);
}

void require_one_of(int32_t value, const char* name, std::initializer_list<int32_t> allowed) {
  for (int32_t a : allowed) {
    if (value == a) return;
  }
  invalid(std::string(name) + ": unknown value " + std::to_string(value));
}

void require_dtype(const posenc_dtype& dtype, const char* name) {
  require_enum(dtype, name, {POSENC_F32, POSENC_BF16});
}

int64_t checked_bytes(std::initializer_list<int64_t> sizes, size_t element_bytes,
                      const char* what) {
  const int64_t limit = std::numeric_limits<int64_t>::max() / int64_t(element_bytes);
  int64_t count = 1;
  bool empty = false;
  for (int64_t size : sizes) {
    if (size == 0) {
      empty = true;
      continue;
    }
    if (count > limit / size) size_overflows(what);
    count *= size;
  }
  return empty ? 0 : count * int64_t(element_bytes);
}

void require_key_map(int64_t height, int64_t width) {
  require_non_negative(height, "desc->kv_map_height");
  require_non_negative(width, "desc->kv_map_width");
  if ((height == 0) != (width == 0)) {
    const std::string got = std::to_string(height) + " x " + std::to_string(width);
    invalid("desc->kv_map_height and desc->kv_map_width must both be 0 (the query map's) or "
            "both positive (got " + got + ")");
  }
}

int64_t relative_rows(int64_t size, const char* name) {
  if (size > std::numeric_limits<int64_t>::max() - (size - 1)) {
    fail(POSENC_ERROR_OVERFLOW, std::string("2 * ") + name + " - 1 overflows");
  }
  return size + (size - 1);  // 2 * size would overflow for size = 2^62
}

int64_t checked_sum(int64_t a, int64_t b, const char* what) {
  if (a > std::numeric_limits<int64_t>::max() - b) {
    fail(POSENC_ERROR_OVERFLOW, std::string(what) + " overflows");
  }
  return a + b;
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

void require_workspace(const void* workspace, size_t workspace_bytes, size_t needed,
                       const void* out, int64_t out_bytes, const char* out_name,
                       const Regions& inputs) {
  if (workspace == nullptr) return;
  if (workspace_bytes < needed) {
    invalid("workspace_bytes (" + std::to_string(workspace_bytes) + ") is less than the " +
            std::to_string(needed) + " bytes this call needs");
  }
  const int64_t bytes = int64_t(needed);
  require_disjoint(out, out_bytes, out_name, workspace, bytes, "workspace");
  for (const Region& r : inputs) {
    require_disjoint(workspace, bytes, "workspace", r.pointer, r.bytes, r.name);
  }
}

}  // namespace posenc
