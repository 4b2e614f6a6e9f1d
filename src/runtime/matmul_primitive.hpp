// The oneDNN matmul primitives of posenc's GEMMs (runtime/matmul.hpp), made
// once per shape and kept in one process-wide cache: past its capacity
// (set_matmul_cache_capacity) the least recently used is dropped, and a call
// running it keeps it alive until it ends. A hit takes a shared lock only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "posenc/core.h"
#include "runtime/matmul.hpp"
#include "runtime/packed_tiles.hpp"

namespace posenc {

struct CachedMatmul {
  dnnl::memory::desc a, b, c;  // b: as the primitive reads it (packed or not)
  dnnl::matmul primitive;
  size_t scratchpad_bytes;
  std::string impl;  // oneDNN's implementation name, e.g. "brg:avx512_core"
  // With b_packed: B as stored, and the reorder from it to b (when they differ).
  dnnl::memory::desc b_stored;
  std::optional<dnnl::reorder> pack;
  std::optional<PackedTiles> tiles;  // b's layout where pack_tiles beats the reorder
  mutable std::atomic<uint64_t> last_used{0};  // the cache's clock at the last lookup
};

// The engine of every primitive and memory object; never destroyed
// (threads still inside posenc when the process exits keep using it).
dnnl::engine& cpu_engine();

// Held while the calling thread runs a oneDNN primitive: fork() waits until
// no thread holds one. oneDNN takes locks of its own while a primitive runs
// (its gemm, the AVX2 path's, on every run), and a child forked while
// another thread held one would wait on it for good. The thread holds one
// of several locks, each on a line of its own, and shares it.
class PrimitiveRunHold {
 public:
  PrimitiveRunHold();
  ~PrimitiveRunHold();
  PrimitiveRunHold(const PrimitiveRunHold&) = delete;
  PrimitiveRunHold& operator=(const PrimitiveRunHold&) = delete;

 private:
  std::shared_mutex& lock_;
};

// The primitive of `shape`: the cache's, made there if need be.
std::shared_ptr<const CachedMatmul> cached_matmul(const MatmulShape& shape);

// The cache's primitive of `shape`, or null: never makes one.
std::shared_ptr<const CachedMatmul> cached_matmul_if_made(const MatmulShape& shape);

// oneDNN's C++ errors as posenc's: out of memory as std::bad_alloc (the
// guard's POSENC_ERROR_OUT_OF_MEMORY), anything else as `status`.
[[noreturn]] void rethrow_onednn_error(const dnnl::error& e, posenc_status status,
                                       const char* what);

}  // namespace posenc
