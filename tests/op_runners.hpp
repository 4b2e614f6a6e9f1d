// Every op of the library as a runner: a call on fixed, shared read-only
// inputs that returns its output. Used by the concurrency and determinism
// tests; each op family contributes its runners.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "posenc/posenc.h"

namespace posenc::test {

struct OpRunner {
  std::string name;
  // Runs the op with `context`; returns the output (bf16 outputs widened).
  std::function<std::vector<float>(posenc_context*)> run;
};

std::vector<OpRunner> absolute_runners();
std::vector<OpRunner> attention_runners();
std::vector<OpRunner> relative_runners();
std::vector<OpRunner> rope_runners();

// Every family's runners.
std::vector<OpRunner> all_runners();

}  // namespace posenc::test
