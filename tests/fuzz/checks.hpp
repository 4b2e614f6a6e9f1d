// What every family of the C ABI fuzzer checks after a call, and the context
// a call runs on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "fuzz_input.hpp"
#include "posenc/posenc.h"

namespace posenc::fuzz {

// What output buffers hold before a call; a failed call must leave it there.
constexpr float kUntouched = 77.0f;

// Aborts (a crash for libFuzzer) with `what` and posenc's last message.
void require(bool condition, const char* what);

// Product of sizes if all are valid, else 1 (a buffer a rejected call must
// not touch anyway).
size_t elements(std::initializer_list<int64_t> sizes, int invalid);

// Checks the outcome of a call whose output buffer is `out`, which held only
// `untouched` before the call: a call that must fail fails with a message
// and writes nothing; any other must succeed.
void expect_outcome(posenc_status status, bool must_fail, const std::vector<float>& out,
                    float untouched = kUntouched);

// For calls the harness cannot fully predict (a scaling's parameters, a
// workspace, a dtype the CPU lacks): those it knows are bad must fail; any
// other may fail too, but then with a message and nothing written.
void expect_refusal_if(posenc_status status, bool must_fail, const std::vector<float>& out,
                       float untouched = kUntouched);

// The context of a call, drawn from the input: NULL (the default context) or
// one created for an ISA path and 1 or 2 threads. A path the CPU lacks must
// be refused, and the call then runs on NULL.
class FuzzContext {
 public:
  explicit FuzzContext(FuzzInput& in);
  ~FuzzContext() { posenc_context_destroy(context_); }
  FuzzContext(const FuzzContext&) = delete;
  FuzzContext& operator=(const FuzzContext&) = delete;
  posenc_context* get() const { return context_; }

 private:
  posenc_context* context_ = nullptr;
};

}  // namespace posenc::fuzz
