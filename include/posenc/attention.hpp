// C++ wrappers of posenc/attention.h; shapes, layouts and errors as
// documented there. Every function that calls posenc throws posenc::Error
// on bad input; the builders of descs and strides fill structs, refusing only
// what they cannot describe (dense_strides' and packed_qkv_desc's layouts,
// packed_qkv_desc's lengths and head sizes, strides int64 cannot hold), and
// posenc checks the rest where the desc is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "posenc/attention.h"
#include "posenc/core.hpp"

namespace posenc {

// A desc for plain attention (see posenc_attention_desc_init); set the
// other fields directly.
inline posenc_attention_desc attention_desc(int64_t batch, int64_t heads, int64_t q_len,
                                            int64_t kv_len, int64_t head_dim) {
  posenc_attention_desc desc;
  posenc_attention_desc_init(&desc, batch, heads, q_len, kv_len, head_dim);
  return desc;
}

// Strides for POSENC_LAYOUT_STRIDED (desc.q_strides .. out_strides).

namespace detail {

// dense_strides below; `what` names the sizes in an overflow's message.
inline posenc_token_strides dense_strides(bool bthd, int64_t heads, int64_t tokens,
                                          int64_t head_dim, const char* what) {
  // The inner product of the two, then the whole tensor's.
  const int64_t inner = checked_product(bthd ? heads : tokens, head_dim, what);
  const int64_t batch = checked_product(bthd ? tokens : heads, inner, what);
  if (bthd) return {batch, head_dim, inner};
  return {batch, inner, head_dim};
}

}  // namespace detail

// A dense tensor of `tokens` tokens in the BHTD or BTHD layout (another
// layout throws), to mix layouts in one call (a packed qkv in, a BTHD out).
inline posenc_token_strides dense_strides(posenc_attention_layout layout, int64_t heads,
                                          int64_t tokens, int64_t head_dim) {
  const bool bthd = layout == POSENC_LAYOUT_BTHD;
  if (!bthd && layout != POSENC_LAYOUT_BHTD) {
    throw Error(POSENC_ERROR_INVALID_ARGUMENT,
                "posenc::dense_strides: layout must be POSENC_LAYOUT_BHTD or POSENC_LAYOUT_BTHD");
  }
  return detail::dense_strides(bthd, heads, tokens, head_dim,
                               "posenc::dense_strides: heads * tokens * head_dim");
}

// A KV cache [batch, kv_heads, capacity, head_dim] holding kv_len <=
// capacity tokens: rows past kv_len are never read.
inline posenc_token_strides kv_cache_strides(int64_t kv_heads, int64_t capacity,
                                             int64_t head_dim) {
  return detail::dense_strides(false, kv_heads, capacity, head_dim,
                               "posenc::kv_cache_strides: kv_heads * capacity * head_dim");
}

// q, k, v as the three views of one packed qkv tensor (what a fused qkv
// projection writes): [batch, tokens, heads + 2 * kv_heads, head_dim], i.e.
// [batch, tokens, 3, heads, head_dim] when kv_heads = heads. All three have
// `strides`; q is at qkv, k at qkv + k_offset, v at qkv + v_offset elements.
struct PackedQkv {
  posenc_token_strides strides;
  int64_t k_offset, v_offset;
};
inline PackedQkv packed_qkv(int64_t tokens, int64_t heads, int64_t kv_heads, int64_t head_dim) {
  constexpr const char* kWhat = "posenc::packed_qkv: tokens * (heads + 2 * kv_heads) * head_dim";
  using detail::checked_product;
  using detail::checked_sum;
  const int64_t k_heads = checked_sum(heads, kv_heads, kWhat);  // q's and k's
  const int64_t row = checked_product(checked_sum(k_heads, kv_heads, kWhat), head_dim, kWhat);
  return {{checked_product(tokens, row, kWhat), head_dim, row},
          checked_product(heads, head_dim, kWhat),
          checked_product(k_heads, head_dim, kWhat)};
}

// desc (self-attention: q_len = kv_len tokens) made STRIDED for a packed qkv
// (packed_qkv of its heads and kv_heads), with out dense in out_layout (BHTD
// or BTHD). For one head size: desc.value_head_dim 0 (or head_dim). Throws
// for a desc of other lengths or head sizes, which that packing would not
// describe.
inline posenc_attention_desc packed_qkv_desc(posenc_attention_desc desc,
                                             posenc_attention_layout out_layout) {
  if (desc.q_len != desc.kv_len) {
    throw Error(POSENC_ERROR_INVALID_ARGUMENT,
                "posenc::packed_qkv_desc: desc.q_len (" + std::to_string(desc.q_len) +
                    ") differs from desc.kv_len (" + std::to_string(desc.kv_len) +
                    "): a packed qkv holds as many keys as queries");
  }
  if (desc.value_head_dim != 0 && desc.value_head_dim != desc.head_dim) {
    throw Error(POSENC_ERROR_INVALID_ARGUMENT,
                "posenc::packed_qkv_desc: desc.value_head_dim (" +
                    std::to_string(desc.value_head_dim) + ") differs from desc.head_dim (" +
                    std::to_string(desc.head_dim) + "): packed_qkv has one head size");
  }
  const int64_t kv_heads = desc.kv_heads == 0 ? desc.heads : desc.kv_heads;
  const PackedQkv packed = packed_qkv(desc.q_len, desc.heads, kv_heads, desc.head_dim);
  desc.layout = POSENC_LAYOUT_STRIDED;
  desc.q_strides = desc.k_strides = desc.v_strides = packed.strides;
  if (out_layout != POSENC_LAYOUT_BHTD && out_layout != POSENC_LAYOUT_BTHD) {
    throw Error(
        POSENC_ERROR_INVALID_ARGUMENT,
        "posenc::packed_qkv_desc: out_layout must be POSENC_LAYOUT_BHTD or POSENC_LAYOUT_BTHD");
  }
  desc.out_strides = dense_strides(out_layout, desc.heads, desc.q_len, desc.head_dim);
  return desc;
}

inline size_t attention_workspace_size(const Context& context,
                                       const posenc_attention_desc& desc) {
  size_t bytes = 0;
  check(posenc_attention_workspace_size(context.get(), &desc, &bytes));
  return bytes;
}

// Uses the caller's workspace (an arena's, say) of `bytes` >=
// attention_workspace_size(context, desc), any alignment; null: posenc's own.
// (Two overloads rather than default arguments, so that a workspace passed
// without its size stays a compile error.)
inline void attention(const Context& context, const posenc_attention_desc& desc,
                      const posenc_attention_tensors& tensors, void* workspace, size_t bytes) {
  check(posenc_attention(context.get(), &desc, &tensors, workspace, bytes));
}

// Uses posenc's own workspace (kept by the calling thread: posenc_attention).
inline void attention(const Context& context, const posenc_attention_desc& desc,
                      const posenc_attention_tensors& tensors) {
  attention(context, desc, tensors, nullptr, 0);
}

namespace detail {

// How a workspace names itself in errors.
inline const char* workspace_name(const posenc_attention_desc&) {
  return "posenc::AttentionWorkspace: workspace";
}
inline const char* workspace_name(const posenc_bottleneck_desc&) {
  return "posenc::BottleneckWorkspace: workspace";
}

// A workspace sized once for a desc on a context, for calls that allocate
// nothing whatever its size (posenc's own is kept within a bound:
// posenc_attention): AttentionWorkspace ws(context, desc); ws.run(tensors) (likewise
// BottleneckWorkspace). It runs on a context of its own with the given one's
// ISA path and thread count, so the given one may be moved or destroyed (a
// default Context: the process default). Sized for the thread count at
// construction: with num_threads 0 (OpenMP's default at call time), a later
// larger default makes run() throw. Its context is made as Context(isa,
// num_threads) is, so a path above a cap lowered since throws. One call at a
// time (one workspace per thread). Move-only; a moved-from workspace runs on
// the process default context, on posenc's own workspace.
template <class Desc, class Tensors,
          posenc_status (*kSize)(posenc_context*, const Desc*, size_t*),
          posenc_status (*kRun)(posenc_context*, const Desc*, const Tensors*, void*, size_t)>
class Workspace {
 public:
  Workspace(const Context& context, const Desc& desc)
      : context_(context.get() ? Context(context.isa(), context.num_threads()) : Context()),
        desc_(desc) {
    check(kSize(context_.get(), &desc_, &size_));
    // Not zeroed, as posenc's own is not: each thread of a call first touches
    // its part (a memset here would place every page on this thread's node).
    bytes_.reset(new (std::nothrow) unsigned char[size_]);
    if (size_ > 0 && !bytes_) {
      throw Error(POSENC_ERROR_OUT_OF_MEMORY, std::string(workspace_name(desc_)) +
                                                  ": no memory for " + std::to_string(size_) +
                                                  " bytes");
    }
  }
  Workspace(Workspace&& other) noexcept
      : context_(std::move(other.context_)),
        desc_(other.desc_),
        bytes_(std::move(other.bytes_)),
        size_(std::exchange(other.size_, 0)) {}
  Workspace& operator=(Workspace&& other) noexcept {
    if (this != &other) {
      context_ = std::move(other.context_);
      desc_ = other.desc_;
      bytes_ = std::move(other.bytes_);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  void run(const Tensors& tensors) {
    check(kRun(context_.get(), &desc_, &tensors, bytes_.get(), size_));
  }
  size_t size() const noexcept { return size_; }

 private:
  Context context_;
  Desc desc_;
  std::unique_ptr<unsigned char[]> bytes_;
  size_t size_ = 0;
};

}  // namespace detail

// posenc_attention's workspace, kept (detail::Workspace above).
using AttentionWorkspace = detail::Workspace<posenc_attention_desc, posenc_attention_tensors,
                                             posenc_attention_workspace_size, posenc_attention>;

inline posenc_bottleneck_desc bottleneck_desc(int64_t batch, int64_t channels, int64_t height,
                                              int64_t width, int64_t heads, int64_t head_dim) {
  posenc_bottleneck_desc desc;
  posenc_bottleneck_desc_init(&desc, batch, channels, height, width, heads, head_dim);
  return desc;
}

inline size_t bottleneck_workspace_size(const Context& context,
                                        const posenc_bottleneck_desc& desc) {
  size_t bytes = 0;
  check(posenc_bottleneck_workspace_size(context.get(), &desc, &bytes));
  return bytes;
}

// Uses posenc's own workspace.
inline void bottleneck_mhsa(const Context& context, const posenc_bottleneck_desc& desc,
                            const void* fmap, const void* w_qkv, const void* rel_h,
                            const void* rel_w, void* out) {
  check(posenc_bottleneck_mhsa(context.get(), &desc, fmap, w_qkv, rel_h, rel_w, out, nullptr,
                               0));
}

// Uses the caller's workspace of `bytes` >= bottleneck_workspace_size(context,
// desc), any alignment; null: posenc's own.
inline void bottleneck(const Context& context, const posenc_bottleneck_desc& desc,
                       const posenc_bottleneck_tensors& tensors, void* workspace,
                       size_t bytes) {
  check(posenc_bottleneck(context.get(), &desc, &tensors, workspace, bytes));
}

// Uses posenc's own workspace (a BottleneckWorkspace is the caller's).
inline void bottleneck(const Context& context, const posenc_bottleneck_desc& desc,
                       const posenc_bottleneck_tensors& tensors) {
  bottleneck(context, desc, tensors, nullptr, 0);
}

// posenc_bottleneck's workspace, kept (detail::Workspace above).
using BottleneckWorkspace = detail::Workspace<posenc_bottleneck_desc, posenc_bottleneck_tensors,
                                              posenc_bottleneck_workspace_size, posenc_bottleneck>;

}  // namespace posenc
