#include "runtime/cpu_features.hpp"

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

}  // namespace

bool cpu_has(CpuFeatures features) {
  for (; features != 0; features &= features - 1) {  // each set bit, lowest first
    if (!cpu_has_feature(CpuFeature(features & (~features + 1)))) return false;
  }
  return true;
}

bool cpu_supports(posenc_isa isa) {
  const IsaPath* path = compiled_isa_path(isa);
  return path != nullptr && cpu_has(path->features);
}

}  // namespace posenc
