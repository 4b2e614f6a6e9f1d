#include "runtime/workspace.hpp"

namespace posenc {
namespace {

// The last buffer the calling thread made (KeptBuffer::next the others).
thread_local KeptBuffer* last_kept_buffer = nullptr;

}  // namespace

KeptBuffer::KeptBuffer() : next(last_kept_buffer) { last_kept_buffer = this; }

KeptBuffer::~KeptBuffer() { last_kept_buffer = next; }

void release_kept_buffers() {
  for (KeptBuffer* kept = last_kept_buffer; kept != nullptr; kept = kept->next) {
    kept->memory.reset();
    kept->bytes = 0;
  }
}

}  // namespace posenc
