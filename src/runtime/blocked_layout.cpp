#include "runtime/blocked_layout.hpp"

namespace posenc {

int64_t inner_block(const dnnl_memory_desc_t& md, int d) {
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  int64_t block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    if (blocking.inner_idxs[i] == d) block *= blocking.inner_blks[i];
  }
  return block;
}

// The outer blocks by their strides, then the inner blocks, innermost last.
int64_t blocked_offset(const dnnl_memory_desc_t& md, int64_t k, int64_t n) {
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  const int64_t block[2] = {inner_block(md, 0), inner_block(md, 1)};
  int64_t within[2] = {k % block[0], n % block[1]};
  int64_t offset = md.offset0 + k / block[0] * blocking.strides[0] +
                   n / block[1] * blocking.strides[1];
  int64_t step = 1;
  for (int i = blocking.inner_nblks - 1; i >= 0; --i) {
    int64_t& index = within[blocking.inner_idxs[i]];
    offset += index % blocking.inner_blks[i] * step;
    index /= blocking.inner_blks[i];
    step *= blocking.inner_blks[i];
  }
  return offset;
}

bool holds_layout_of(const dnnl_memory_desc_t& whole, const dnnl_memory_desc_t& part) {
  if (whole.format_kind != dnnl_blocked || part.format_kind != dnnl_blocked ||
      whole.ndims != 2 || part.ndims != 2 || whole.data_type != part.data_type ||
      whole.offset0 != 0 || part.offset0 != 0 || whole.extra.flags != 0 ||
      part.extra.flags != 0) {
    return false;
  }
  const bool k_unpadded = part.padded_dims[0] == part.dims[0];
  const bool k_as_whole =
      part.dims[0] == whole.dims[0] && part.padded_dims[0] == whole.padded_dims[0];
  if (!k_unpadded && !k_as_whole) return false;
  const dnnl_blocking_desc_t& wb = whole.format_desc.blocking;
  const dnnl_blocking_desc_t& pb = part.format_desc.blocking;
  if (wb.inner_nblks != pb.inner_nblks) return false;
  for (int i = 0; i < pb.inner_nblks; ++i) {
    if (wb.inner_blks[i] != pb.inner_blks[i] || wb.inner_idxs[i] != pb.inner_idxs[i]) {
      return false;
    }
  }
  for (int d = 0; d < 2; ++d) {
    if (part.dims[d] > whole.dims[d] || part.padded_dims[d] > whole.padded_dims[d] ||
        part.padded_offsets[d] != 0 || whole.padded_offsets[d] != 0) {
      return false;
    }
    const bool blocks_along_d = part.padded_dims[d] / inner_block(part, d) > 1;
    if (blocks_along_d && pb.strides[d] != wb.strides[d]) return false;
  }
  return true;
}

}  // namespace posenc
