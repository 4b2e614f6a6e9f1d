// Argument checks for the C ABI. Each throws posenc::Error with a message
// naming the argument; entry points run all checks before writing anything.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "posenc/core.h"

namespace posenc {

// Throws posenc::Error(status, message); the message must name the argument.
[[noreturn]] void fail(posenc_status status, const std::string& message);
// fail(POSENC_ERROR_INVALID_ARGUMENT, message).
[[noreturn]] void invalid(const std::string& message);

void require_not_null(const void* pointer, const char* name);
// A tensor: not NULL and aligned to its element_bytes (posenc/core.h), else
// POSENC_ERROR_INVALID_ARGUMENT naming it.
void require_tensor(const void* pointer, size_t element_bytes, const char* name);
// A tensor of `bytes` bytes that may have no elements (an axis that counts
// batches, heads, tokens or rows is 0): as require_tensor, but NULL is
// allowed when bytes is 0, since such a tensor is never read or written.
void require_tensor_or_empty(const void* pointer, size_t element_bytes, int64_t bytes,
                             const char* name);
// A pointer that must be NULL in this configuration; `why` ends the message
// ("... must be NULL unless ...").
void require_null(const void* pointer, const char* name, const char* why);
void require_positive(int64_t value, const char* name);
void require_non_negative(int64_t value, const char* name);
// value is 0 or 1.
void require_flag(int value, const char* name);
void require_finite(double value, const char* name);
// A finite value > bound (>= bound); `bound_text` names the bound in the
// message ("0", "beta_slow").
void require_above(double value, double bound, const char* name, const char* bound_text);
void require_at_least(double value, double bound, const char* name, const char* bound_text);
// A double as an error message shows it: %.9g (1e-30, not std::to_string's
// 0.000000).
std::string real_text(double value);
// A finite base >= 2^-64 other than 1, for frequencies base^(-2i/D) (below 1
// they rise with i, to at most 2^64).
bool is_frequency_base(double base);
void require_frequency_base(double base, const char* name);
// The largest position whose angles are worked out in double: every integer
// up to it is exact there.
constexpr int64_t kMaxExactPosition = int64_t(1) << 53;
// Attention's and the position biases' query offsets (|value| <= 2^40) and
// largest distances ([0, 2^40]): bounds that keep sums and differences of
// positions far from int64's range.
constexpr int64_t kMaxPositionOffset = int64_t(1) << 40;
void require_position_offset(int64_t value, const char* name);
void require_max_distance(int64_t value, const char* name);
// The integer a caller stored in an enum parameter or field, read as bytes:
// loading a value outside the enum's range as the enum is undefined.
template <class Enum>
int32_t enum_value(const Enum& value) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int32_t));
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}
// value is one of `allowed`.
void require_one_of(int32_t value, const char* name, std::initializer_list<int32_t> allowed);
// An enum argument holds one of the `allowed` values; checked before the
// enum is loaded.
template <class Enum>
void require_enum(const Enum& value, const char* name, std::initializer_list<int32_t> allowed) {
  require_one_of(enum_value(value), name, allowed);
}
void require_dtype(const posenc_dtype& dtype, const char* name);

// The size in bytes of a tensor of these sizes and element_bytes per element,
// throwing POSENC_ERROR_OVERFLOW (naming `what`) if it overflows. An empty
// tensor (a size of 0) has 0 bytes, but its other sizes must still have a
// product that fits: a 2^62-wide row is refused in an empty batch too.
int64_t checked_bytes(std::initializer_list<int64_t> sizes, size_t element_bytes,
                      const char* what);
// A 2D desc's key map, desc->kv_map_height x desc->kv_map_width: 0 x 0 (the
// query map's) or both sides positive.
void require_key_map(int64_t height, int64_t width);
// 2 * size - 1, the rows of a relative table over `size` >= 1 positions, or
// POSENC_ERROR_OVERFLOW "2 * <name> - 1 overflows".
int64_t relative_rows(int64_t size, const char* name);
// a + b for non-negative a and b, or POSENC_ERROR_OVERFLOW "<what> overflows".
int64_t checked_sum(int64_t a, int64_t b, const char* what);

// Throws POSENC_ERROR_ALIASING if the byte ranges overlap. An empty range
// (0 bytes) overlaps nothing.
void require_disjoint(const void* a, int64_t a_bytes, const char* a_name, const void* b,
                      int64_t b_bytes, const char* b_name);
// Allows a == b exactly (in place); any other overlap throws.
void require_same_or_disjoint(const void* a, int64_t a_bytes, const char* a_name,
                              const void* b, int64_t b_bytes, const char* b_name);


// A tensor a call reads: its address and size, for the aliasing checks.
struct Region {
  const void* pointer;
  int64_t bytes;
  const char* name;
};

// The input regions of a call, at most ten: kept without allocating.
class Regions {
 public:
  Regions(std::initializer_list<Region> regions) {
    for (const Region& r : regions) push_back(r);
  }
  void push_back(const Region& r) { items_.at(count_++) = r; }
  const Region* begin() const { return items_.data(); }
  const Region* end() const { return items_.data() + count_; }

 private:
  std::array<Region, 10> items_{};
  size_t count_ = 0;
};

// A caller's workspace (none when NULL): at least `needed` bytes, else
// POSENC_ERROR_INVALID_ARGUMENT; its `needed` bytes disjoint from out and
// from the inputs, else POSENC_ERROR_ALIASING.
void require_workspace(const void* workspace, size_t workspace_bytes, size_t needed,
                       const void* out, int64_t out_bytes, const char* out_name,
                       const Regions& inputs);

}  // namespace posenc
