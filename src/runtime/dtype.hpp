// posenc's element types: their sizes, an element read as fp32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "posenc/core.h"

namespace posenc {

// Bytes of one element: 4 for F32, 2 for BF16.
constexpr size_t dtype_bytes(posenc_dtype dtype) { return dtype == POSENC_BF16 ? 2 : 4; }

// Element `index` of a tensor of dtype, as fp32.
inline float element_as_f32(const void* tensor, posenc_dtype dtype, int64_t index) {
  if (dtype == POSENC_BF16) return posenc_bf16_to_f32(static_cast<const uint16_t*>(tensor)[index]);
  return static_cast<const float*>(tensor)[index];
}

}  // namespace posenc
