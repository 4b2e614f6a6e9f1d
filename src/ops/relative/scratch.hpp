// Per-thread scratch of the relative-logits ops: one buffer per thread,
// grown on demand and reused across calls.
#pragma once

#include <cstdint>
#include <vector>

namespace posenc::ops {

inline float* relative_thread_scratch(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (int64_t(buffer.size()) < floats) buffer.resize(size_t(floats));
  return buffer.data();
}

}  // namespace posenc::ops
