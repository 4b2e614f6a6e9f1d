// Whether the calling thread's posenc state (its kept buffers, GEMM slots
// and RoPE angles: thread_locals) is still there. When a thread ends, and
// for the main thread at exit(), C++ destroys its thread_locals in the
// reverse order of their construction, so a caller's destructor that runs
// then may come after some of posenc's. Each of those marks the thread's
// state ended as it goes; from then on what needs the state refuses the
// call rather than touch what is gone.
#pragma once

namespace posenc {

// Marks the calling thread's posenc state ended (the destructors of its
// thread_locals call it).
void end_thread_state() noexcept;

bool thread_state_ended() noexcept;

// Throws POSENC_ERROR_UNSUPPORTED where the calling thread's state has ended.
void require_thread_state();

}  // namespace posenc
