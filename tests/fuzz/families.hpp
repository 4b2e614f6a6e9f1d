// The op families of the C ABI fuzzer, one function each: every function
// draws one call's arguments from the input, makes the call, and checks its
// outcome (checks.hpp). api_fuzzer.cpp dispatches on the input's first byte.
#pragma once

#include "fuzz_input.hpp"

namespace posenc::fuzz {

// core.cpp: status strings, ISA names and caps, contexts, the primitive
// cache's capacity, bf16 conversions.
void fuzz_core(FuzzInput& in);
// absolute.cpp
void fuzz_sinusoid_table(FuzzInput& in);  // 1D and 2D tables
void fuzz_add(FuzzInput& in);             // add_sinusoid, add_learned
void fuzz_concat(FuzzInput& in);
void fuzz_resize_absolute(FuzzInput& in);
// relative.cpp
void fuzz_absolute_logits(FuzzInput& in);
void fuzz_rel_to_abs(FuzzInput& in);
void fuzz_relative_1d(FuzzInput& in);
void fuzz_relative_2d(FuzzInput& in);     // decomposed, full and _maps
// rope.cpp
void fuzz_rope(FuzzInput& in);            // rope, rope_qk, caches, frequencies
// attention.cpp
void fuzz_attention(FuzzInput& in);       // with and without a workspace
void fuzz_bottleneck(FuzzInput& in);
// bias.cpp
void fuzz_position_bias(FuzzInput& in);   // each kind, ALiBi's slopes
void fuzz_resize_table(FuzzInput& in);    // 1D linear and 2D bicubic

}  // namespace posenc::fuzz
