#include "checks.hpp"

#include <cstdio>
#include <cstdlib>

namespace posenc::fuzz {

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "posenc fuzz: %s (last error: %s)\n", what, posenc_last_error());
    std::abort();
  }
}

size_t elements(std::initializer_list<int64_t> sizes, int invalid) {
  if (invalid > 0) return 1;
  size_t n = 1;
  for (int64_t s : sizes) n *= size_t(s);
  return n;
}

void expect_outcome(posenc_status status, bool must_fail, const std::vector<float>& out,
                    float untouched) {
  if (must_fail) {
    require(status != POSENC_OK, "an invalid call succeeded");
    require(posenc_last_error()[0] != '\0', "a failed call left no message");
    for (float v : out) require(v == untouched, "a failed call wrote its output");
  } else {
    require(status == POSENC_OK, "a valid call failed");
  }
}

void expect_refusal_if(posenc_status status, bool must_fail, const std::vector<float>& out,
                       float untouched) {
  if (must_fail || status != POSENC_OK) expect_outcome(status, true, out, untouched);
}

FuzzContext::FuzzContext(FuzzInput& in) {
  if (in.choice(4) != 0) return;  // mostly the default context
  const auto isa = posenc_isa(in.choice(6));  // 5 names no path
  const int threads = in.choice(3);
  int available = 0;
  const bool known = posenc_isa_available(isa, &available) == POSENC_OK;
  require(known == (isa != POSENC_ISA_AUTO && isa <= POSENC_ISA_NEON), "posenc_isa_available");
  const posenc_status status = posenc_context_create(isa, threads, &context_);
  if (status != POSENC_OK) {
    require(context_ == nullptr && posenc_last_error()[0] != '\0', "a refused context");
    require(isa != POSENC_ISA_AUTO, "a context on AUTO refused");
    return;
  }
  require(isa == POSENC_ISA_AUTO || available, "a context on a path the CPU lacks");
  require(posenc_context_num_threads(context_) == threads, "the context's threads");
  require(posenc_context_isa(context_) != POSENC_ISA_AUTO, "a context on AUTO");
}

}  // namespace posenc::fuzz
