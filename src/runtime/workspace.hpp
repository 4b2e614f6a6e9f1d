// Workspaces of the ops: carved into 64-byte aligned pieces, and either the
// caller's memory or the op's own; and the scratch the calling thread keeps
// between calls.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/thread_state.hpp"

namespace posenc {

constexpr size_t kWorkspaceAlign = 64;

// bytes rounded up to the workspace alignment.
constexpr size_t workspace_aligned(size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// p advanced to the next workspace alignment boundary (p where aligned).
inline uint8_t* workspace_aligned(uint8_t* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  return p + (kWorkspaceAlign - address % kWorkspaceAlign) % kWorkspaceAlign;
}

// `bytes` of new memory at a 64-byte boundary, not zeroed, held by `owned`
// (whose old memory is freed first).
inline uint8_t* allocate_aligned(size_t bytes, std::unique_ptr<uint8_t[]>& owned) {
  owned.reset();
  owned.reset(new uint8_t[bytes + kWorkspaceAlign]);
  return workspace_aligned(owned.get());
}

// The buffer the calling thread keeps for Tag (thread_buffer). Each links
// itself into its thread's list of them when the thread first uses it.
struct KeptBuffer {
  KeptBuffer();
  ~KeptBuffer();  // (thread_locals end in reverse order: the list's last first)
  KeptBuffer(const KeptBuffer&) = delete;
  KeptBuffer& operator=(const KeptBuffer&) = delete;

  std::unique_ptr<uint8_t[]> memory;
  size_t bytes = 0;
  KeptBuffer* next;  // the one the thread used before
};
template <class Tag>
KeptBuffer& kept_buffer() {
  return thread_state_part<KeptBuffer, Tag>();
}

// Frees every buffer the calling thread keeps (posenc_release_thread_memory);
// they grow again when next used. Never while one is in use.
void release_kept_buffers();

// A buffer of at least `bytes`, 64-byte aligned, that the calling thread
// keeps for its later calls (grown, never shrunk; its contents are not kept
// when it grows, nor zeroed): one per Tag, a type naming its use; two uses
// of one Tag must never hold it at once. Growing frees the old buffer
// first, so that a thread never holds both.
template <class Tag>
uint8_t* thread_buffer(size_t bytes) {
  KeptBuffer& kept = kept_buffer<Tag>();
  if (kept.bytes < bytes + kWorkspaceAlign) {
    kept.bytes = 0;
    allocate_aligned(bytes, kept.memory);
    kept.bytes = bytes + kWorkspaceAlign;
  }
  return workspace_aligned(kept.memory.get());
}

// `bytes` for one call, 64-byte aligned, not zeroed: the calling thread's
// buffer for Tag (thread_buffer) where it holds them already or grows to at
// most kept_limit, so that repeated calls neither allocate nor, past glibc's
// mmap threshold (32 MiB at most), map and fault in their pages afresh;
// else allocated into `owned` for this call only, so that one outsized call
// does not hold its memory for the thread's life.
template <class Tag>
uint8_t* call_memory(size_t bytes, size_t kept_limit, std::unique_ptr<uint8_t[]>& owned) {
  if (bytes <= kept_limit || kept_buffer<Tag>().bytes >= bytes + kWorkspaceAlign) {
    return thread_buffer<Tag>(bytes);
  }
  return allocate_aligned(bytes, owned);
}

// The most the calling thread keeps of one buffer (an op's own workspace,
// a scratch) for later calls of `threads` threads: 256 MiB, or 16 MiB per
// thread where that is more (an attention's workspace is a few MiB per
// thread). A call needing more allocates it for itself (call_memory).
constexpr size_t kept_buffer_limit(int threads) {
  return std::max(size_t(256) << 20, size_t(threads) * (size_t(16) << 20));
}

// `count` T of scratch for one call of `threads` threads, 64-byte aligned,
// not zeroed: call_memory for Tag within kept_buffer_limit(threads).
template <class T, class Tag>
class CallScratch {
 public:
  CallScratch(size_t count, int threads)
      : base_(reinterpret_cast<T*>(
            call_memory<Tag>(count * sizeof(T), kept_buffer_limit(threads), owned_))) {}

  T* get() const { return base_; }

 private:
  std::unique_ptr<uint8_t[]> owned_;
  T* base_;
};

// The thread_buffer tag of the ops' own workspaces.
struct OpWorkspaceTag;

// The caller's workspace, or if it gave none the op's own (call_memory, kept
// as above: the Python package's default), advanced to the next 64-byte
// boundary. `bytes` includes kWorkspaceAlign of slack for that. The op's
// own is left as it comes, as a caller's workspace is: zeroing it would be
// a serial pass over every thread's scratch (tens of MB for an attention on
// 16 threads). Only the outermost op of a call takes its own: the BoTNet
// block gives the attention it runs a part of its workspace.
class Workspace {
 public:
  Workspace(void* given, size_t bytes, int threads)
      : base_(given != nullptr
                  ? workspace_aligned(static_cast<uint8_t*>(given))
                  : call_memory<OpWorkspaceTag>(bytes, kept_buffer_limit(threads), owned_)) {}
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  uint8_t* base() const { return base_; }

 private:
  std::unique_ptr<uint8_t[]> owned_;
  uint8_t* base_;
};

// The scratch of each thread of a parallel region (runtime/parallel.hpp):
// `slots` arrays of `count` T, a CallScratch for Tag. Made before the
// region; the region's threads only index it.
template <class T, class Tag>
class RegionScratch {
 public:
  RegionScratch(int slots, int64_t count)
      : stride_(workspace_aligned(size_t(count) * sizeof(T))),
        scratch_(size_t(slots) * stride_, slots) {}

  T* slot(int index) const {
    return reinterpret_cast<T*>(scratch_.get() + size_t(index) * stride_);
  }

 private:
  size_t stride_;
  CallScratch<uint8_t, Tag> scratch_;
};

}  // namespace posenc
