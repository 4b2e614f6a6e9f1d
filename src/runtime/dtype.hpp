// Sizes of posenc's element types.
#pragma once

#include <cstddef>

#include "posenc/core.h"

namespace posenc {

// Bytes of one element: 4 for F32, 2 for BF16.
constexpr size_t dtype_bytes(posenc_dtype dtype) { return dtype == POSENC_BF16 ? 2 : 4; }

}  // namespace posenc
