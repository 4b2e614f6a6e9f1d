// Workspaces of the ops: carved into 64-byte aligned pieces, and either the
// caller's memory or memory owned for one call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace posenc {

constexpr size_t kWorkspaceAlign = 64;

// bytes rounded up to the workspace alignment.
constexpr size_t workspace_aligned(size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// The caller's workspace, or `bytes` allocated for this call if it gave none,
// advanced to the next 64-byte boundary. `bytes` includes kWorkspaceAlign of
// slack for that.
class Workspace {
 public:
  Workspace(void* given, size_t bytes) {
    if (given == nullptr) {
      owned_.resize(bytes);
      given = owned_.data();
    }
    const auto address = reinterpret_cast<uintptr_t>(given);
    base_ = static_cast<uint8_t*>(given) +
            (kWorkspaceAlign - address % kWorkspaceAlign) % kWorkspaceAlign;
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  uint8_t* base() const { return base_; }

 private:
  std::vector<uint8_t> owned_;
  uint8_t* base_;
};

}  // namespace posenc
