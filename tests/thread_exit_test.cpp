// Calls from a caller's destructor that runs as its thread ends (a
// thread_local's; exit() ends the main thread's the same way), for every case
// of cases/: each works, or, where C++ has destroyed posenc's state for the
// thread already (the caller's object was made before it, so it ends after
// it), is refused with POSENC_ERROR_UNSUPPORTED, its output untouched.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "cases/case.hpp"
#include "compare.hpp"
#include "posenc/posenc.hpp"

namespace posenc::test {
namespace {

using cases::Case;
using cases::Size;

struct ExitCall {
  cases::Problem problem;
  std::vector<float> before, expected;  // the output before the call; a call's on a live thread
  posenc_status status = POSENC_OK;
  std::string message;
  std::vector<float> after;
};

// Every call, once, from a destructor: give each thread its own object.
struct CallsAtThreadExit {
  std::vector<ExitCall>* calls = nullptr;
  posenc_context* context = nullptr;
  ~CallsAtThreadExit() {
    for (ExitCall& call : *calls) {
      call.status = call.problem.run(context);
      call.message = posenc_last_error();
      call.after = call.problem.output();
    }
    posenc_release_thread_memory();
  }
};

std::vector<ExitCall> exit_calls(posenc_context* context) {
  std::vector<ExitCall> calls;
  for (const Case& c : cases::all_cases()) {
    cases::Problem live = c.make(Size::test);
    EXPECT_EQ(live.run(context), POSENC_OK) << c.op << ": " << posenc_last_error();
    ExitCall call;
    call.problem = c.make(Size::test);
    call.before = call.problem.output();
    call.expected = live.output();
    calls.push_back(std::move(call));
  }
  return calls;
}

// posenc's state for the calling thread: every case run once.
void make_thread_state(posenc_context* context) {
  for (const Case& c : cases::all_cases()) c.make(Size::test).run(context);
}

TEST(ThreadExit, CallsAfterPosencsStateEndedAreRefused) {
  posenc::Context context(posenc::Isa::automatic, 2);
  std::vector<ExitCall> calls = exit_calls(context.get());
  std::thread([&] {
    thread_local CallsAtThreadExit caller;  // made first: ends last
    caller.calls = &calls;
    caller.context = context.get();
    make_thread_state(context.get());
  }).join();
  int refused = 0;
  const std::vector<Case> all = cases::all_cases();
  for (size_t i = 0; i < calls.size(); ++i) {
    const ExitCall& call = calls[i];
    const std::string& op = all[i].op;
    if (call.status == POSENC_OK) {
      EXPECT_TRUE(bitwise_equal(call.after, call.expected)) << op;
      continue;
    }
    ++refused;
    EXPECT_EQ(call.status, POSENC_ERROR_UNSUPPORTED) << op << ": " << call.message;
    EXPECT_NE(call.message.find("the calling thread (or the process) ends"), std::string::npos)
        << op << ": " << call.message;
    EXPECT_TRUE(bitwise_equal(call.after, call.before)) << op;
  }
  EXPECT_GT(refused, 0);  // the attention cases keep buffers and GEMM slots
}

TEST(ThreadExit, CallsBeforePosencsStateEndsWork) {
  posenc::Context context(posenc::Isa::automatic, 2);
  std::vector<ExitCall> calls = exit_calls(context.get());
  std::thread([&] {
    make_thread_state(context.get());
    thread_local CallsAtThreadExit caller;  // made after posenc's state: ends first
    caller.calls = &calls;
    caller.context = context.get();
  }).join();
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].status, POSENC_OK) << cases::all_cases()[i].op << ": " << calls[i].message;
    EXPECT_TRUE(bitwise_equal(calls[i].after, calls[i].expected)) << cases::all_cases()[i].op;
  }
}

}  // namespace
}  // namespace posenc::test
