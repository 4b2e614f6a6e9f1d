// When an op writes its output with non-temporal stores.
#pragma once

#include <cstdint>

namespace posenc::ops {

// Outputs of at least 32 MiB are streamed: beyond a typical last-level
// cache share they leave the caches anyway, and skipping the
// read-for-ownership of every line multiplies the write bandwidth (4x on
// the development box). Smaller ones stay in the caches for what reads them
// next (the softmax of the logits, the attention that adds a bias).
inline bool stream_output(int64_t bytes) { return bytes >= (int64_t(32) << 20); }

}  // namespace posenc::ops
