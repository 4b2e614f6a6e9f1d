#include "runtime/cpu_features.hpp"

#include <atomic>

#include "runtime/compiled_isas.hpp"

namespace posenc {
namespace {

bool cpu_has_feature(CpuFeature feature) {
#if defined(__x86_64__)
  // __builtin_cpu_supports also checks that the OS saves the vector state.
  switch (feature) {
    case kCpuAvx2: return __builtin_cpu_supports("avx2");
    case kCpuFma: return __builtin_cpu_supports("fma");
    case kCpuAvx512F: return __builtin_cpu_supports("avx512f");
    case kCpuAvx512Cd: return __builtin_cpu_supports("avx512cd");
    case kCpuAvx512Dq: return __builtin_cpu_supports("avx512dq");
    case kCpuAvx512Bw: return __builtin_cpu_supports("avx512bw");
    case kCpuAvx512Vl: return __builtin_cpu_supports("avx512vl");
    case kCpuAvx512Bf16: return __builtin_cpu_supports("avx512bf16");
  }
#endif
  (void)feature;
  return false;  // every feature listed is an x86 one
}

// Every listed feature the CPU has, detected once: cpu_has runs on the path
// of every call (the kernel table of its context).
CpuFeatures detected_features() {
  CpuFeatures found = 0;
  for (uint32_t bit = 1; bit <= kCpuAvx512Bf16; bit <<= 1) {
    if (cpu_has_feature(CpuFeature(bit))) found |= bit;
  }
  return found;
}

std::atomic<CpuFeatures> hidden_features{0};

}  // namespace

bool cpu_has(CpuFeatures features) {
  static const CpuFeatures detected = detected_features();
  const CpuFeatures present = detected & ~hidden_features.load(std::memory_order_relaxed);
  return (present & features) == features;
}

void hide_cpu_features(CpuFeatures features) {
  hidden_features.fetch_or(features, std::memory_order_relaxed);
}

bool cpu_supports(posenc_isa isa) {
  const IsaPath* path = compiled_isa_path(isa);
  return path != nullptr && cpu_has(path->features);
}

bool cpu_is_amd() {
#if defined(__x86_64__)
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

}  // namespace posenc
