#include "runtime/thread_state.hpp"

#include "runtime/error.hpp"

namespace posenc {
namespace {

// Trivially destructible, so readable until the thread's storage goes.
thread_local bool ended = false;

}  // namespace

void end_thread_state() noexcept { ended = true; }

bool thread_state_ended() noexcept { return ended; }

void require_thread_state() {
  if (ended) {
    throw Error(POSENC_ERROR_UNSUPPORTED,
                "called while the calling thread (or the process) ends, after C++ destroyed "
                "posenc's state for the thread: call posenc before that thread's thread_local "
                "objects, or the process's static objects, are destroyed");
  }
}

}  // namespace posenc
