// Fuzzes the C ABI: each input picks an op family (families.hpp), whose
// function draws the call's shapes and parameters (valid or not), pointers
// (NULL, aliased or not), enum values and context. Valid calls must succeed
// and stay inside their buffers (ASan); invalid ones must fail with a message
// and leave the output untouched. Any violation aborts.
#include <cstddef>
#include <cstdint>

#include "families.hpp"
#include "fuzz_input.hpp"

namespace posenc::fuzz {
namespace {

// One entry per family; a new entry point joins the function of its family,
// a new family is appended here.
using Family = void (*)(FuzzInput&);
constexpr Family kFamilies[] = {
    fuzz_sinusoid_table, fuzz_add,         fuzz_relative_1d, fuzz_rope,
    fuzz_attention,      fuzz_core,        fuzz_concat,      fuzz_absolute_logits,
    fuzz_rel_to_abs,     fuzz_relative_2d, fuzz_bottleneck,  fuzz_position_bias,
    fuzz_resize_table,   fuzz_resize_absolute,
};
constexpr int kFamilyCount = int(sizeof(kFamilies) / sizeof(kFamilies[0]));

}  // namespace
}  // namespace posenc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posenc::fuzz;
  FuzzInput in(data, size);
  kFamilies[in.choice(kFamilyCount)](in);
  return 0;
}
