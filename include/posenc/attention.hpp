// C++ wrappers of posenc/attention.h; shapes, layouts and errors as
// documented there. Every function throws posenc::Error on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

inline size_t attention_workspace_size(const Context& context,
                                       const posenc_attention_desc& desc) {
  size_t bytes = 0;
  check(posenc_attention_workspace_size(context.get(), &desc, &bytes));
  return bytes;
}

// Allocates its own workspace for each call.
inline void attention(const Context& context, const posenc_attention_desc& desc,
                      const posenc_attention_tensors& tensors) {
  check(posenc_attention(context.get(), &desc, &tensors, nullptr, 0));
}

// A workspace sized once for a desc on a context, for calls that allocate
// nothing: AttentionWorkspace ws(context, desc); ws.run(tensors).
class AttentionWorkspace {
 public:
  AttentionWorkspace(const Context& context, const posenc_attention_desc& desc)
      : context_(context), desc_(desc), bytes_(attention_workspace_size(context, desc)) {}

  void run(const posenc_attention_tensors& tensors) {
    check(posenc_attention(context_.get(), &desc_, &tensors, bytes_.data(), bytes_.size()));
  }
  size_t size() const { return bytes_.size(); }

 private:
  const Context& context_;
  posenc_attention_desc desc_;
  std::vector<unsigned char> bytes_;
};

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

// Allocates its own workspace.
inline void bottleneck_mhsa(const Context& context, const posenc_bottleneck_desc& desc,
                            const void* fmap, const void* w_qkv, const void* rel_h,
                            const void* rel_w, void* out) {
  check(posenc_bottleneck_mhsa(context.get(), &desc, fmap, w_qkv, rel_h, rel_w, out, nullptr,
                               0));
}

// Allocates its own workspace.
inline void bottleneck(const Context& context, const posenc_bottleneck_desc& desc,
                       const posenc_bottleneck_tensors& tensors) {
  check(posenc_bottleneck(context.get(), &desc, &tensors, nullptr, 0));
}

}  // namespace posenc
