// The ISA paths this build compiles, best first: the one list that dispatch,
// the tests, the benchmarks and the posenc tool walk.
#pragma once

#include <iterator>
#include <vector>

#include "posenc/core.h"

namespace posenc {

// Each has a kernel table of its own (src/arch/); whether the CPU runs it is
// posenc_isa_available's question. On aarch64 BASELINE is another name for
// the NEON path, so it is not listed.
#if defined(__x86_64__)
inline constexpr posenc_isa kCompiledIsas[] = {POSENC_ISA_AVX512, POSENC_ISA_AVX2,
                                               POSENC_ISA_BASELINE};
#elif defined(__aarch64__)
inline constexpr posenc_isa kCompiledIsas[] = {POSENC_ISA_NEON};
#else
#error "posenc supports x86-64 and aarch64"
#endif

// The last of them, which every CPU of the architecture runs.
inline constexpr posenc_isa kBaselineIsa = kCompiledIsas[std::size(kCompiledIsas) - 1];

// Those the CPU supports under the ISA cap, best first: the paths a context
// can be made for now (runtime/isa_cap.cpp).
std::vector<posenc_isa> runnable_isas();

}  // namespace posenc
