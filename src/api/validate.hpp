// Argument checks for the C ABI. Each throws posenc::Error with a message
// naming the argument; entry points run all checks before writing anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace posenc {

void require_not_null(const void* pointer, const char* name);
void require_positive(int64_t value, const char* name);
void require_non_negative(int64_t value, const char* name);
// A finite base > 0 other than 1, for frequencies base^(-2i/D).
void require_frequency_base(double base, const char* name);
void require_sincos_layout(int layout, const char* name);
void require_dtype(int dtype, const char* name);

// The size in bytes of a tensor of these sizes and element_bytes per element,
// throwing POSENC_ERROR_OVERFLOW (naming `what`) if it overflows.
int64_t checked_bytes(std::initializer_list<int64_t> sizes, size_t element_bytes,
                      const char* what);

// Throws POSENC_ERROR_ALIASING if the byte ranges overlap.
void require_disjoint(const void* a, int64_t a_bytes, const char* a_name, const void* b,
                      int64_t b_bytes, const char* b_name);
// Allows a == b exactly (in place); any other overlap throws.
void require_same_or_disjoint(const void* a, int64_t a_bytes, const char* a_name,
                              const void* b, int64_t b_bytes, const char* b_name);

}  // namespace posenc
