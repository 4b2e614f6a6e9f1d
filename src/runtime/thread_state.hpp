// Whether the calling thread's posenc state (its kept buffers, GEMM slots
// and RoPE angles: thread_locals) is still there. When a thread ends, and
// for the main thread at exit(), C++ destroys its thread_locals in the
// reverse order of their construction, so a caller's destructor that runs
// then may come after some of posenc's. Each of those marks the thread's
// state ended as it goes; from then on what needs the state refuses the
// call rather than touch what is gone.
#pragma once

namespace posenc {

// Marks the calling thread's posenc state ended.
void end_thread_state() noexcept;

bool thread_state_ended() noexcept;

// Throws POSENC_ERROR_UNSUPPORTED where the calling thread's state has ended.
void require_thread_state();

// The calling thread's T for Tag, a part of its state: made on first use,
// ending the state as it is destroyed; refused once the state has ended.
template <class T, class Tag = T>
T& thread_state_part() {
  require_thread_state();
  struct Part {
    ~Part() { end_thread_state(); }
    T value;
  };
  thread_local Part part;
  return part.value;
}

}  // namespace posenc
