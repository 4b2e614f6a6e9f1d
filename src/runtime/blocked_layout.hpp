// Where oneDNN's blocked layouts of a 2D [K, N] matrix put its elements
// (the layouts of a packed B: runtime/matmul.hpp's pack_b).
#pragma once

#include <cstdint>

#include <oneapi/dnnl/dnnl_types.h>

namespace posenc {

// The elements of a blocked layout's inner block along dimension d: the
// product of its inner blocks of d.
int64_t inner_block(const dnnl_memory_desc_t& md, int d);

// The offset in elements of element (k, n) of a blocked [K, N] layout.
int64_t blocked_offset(const dnnl_memory_desc_t& md, int64_t k, int64_t n);

// Whether a buffer holding B laid out as `whole` holds B laid out as `part`
// too, each element of part at its offset in whole: the same blocks, part
// no larger, the same strides along each dimension part has more than one
// block of, and no padding of part's K (rows past it, which whole may hold,
// are never read) unless it is whole's K, padded alike (with zeros, which
// pack_b writes). Columns of whole past part's n may hold anything: each
// output column reads its own column of B only.
bool holds_layout_of(const dnnl_memory_desc_t& whole, const dnnl_memory_desc_t& part);

}  // namespace posenc
