// What the processor and the operating system support, ignoring any cap.
#pragma once

#include <cstdint>

#include "posenc/core.h"

namespace posenc {

// Instruction-set features beyond the architecture's baseline, as a bit set
// (the ISA table, runtime/compiled_isas.hpp, says which a path needs).
enum CpuFeature : uint32_t {
  kCpuAvx2 = 1u << 0,
  kCpuFma = 1u << 1,
  kCpuAvx512F = 1u << 2,
  kCpuAvx512Cd = 1u << 3,
  kCpuAvx512Dq = 1u << 4,
  kCpuAvx512Bw = 1u << 5,
  kCpuAvx512Vl = 1u << 6,
  kCpuAvx512Bf16 = 1u << 7,
};
using CpuFeatures = uint32_t;

// True if the CPU and the OS support every feature in `features` (none: true).
bool cpu_has(CpuFeatures features);

// From now on, reports the CPU without `features` (and calls take the
// kernel tables of such a CPU), for the tests: the AVX-512 path as a CPU
// without AVX512-BF16 runs it, on one with it (tests/without_avx512_bf16.cpp).
void hide_cpu_features(CpuFeatures features);

// True if this build has the path `isa` and the CPU and OS can run it.
bool cpu_supports(posenc_isa isa);

// True on an AMD CPU: for the choices measured to differ by vendor
// (runtime/matmul.hpp's bf16_gemms_outpace_fp32).
bool cpu_is_amd();

}  // namespace posenc
