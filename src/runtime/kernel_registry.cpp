#include "runtime/kernel_registry.hpp"

#include "arch/arch_tables.hpp"
#include "runtime/cpu_features.hpp"

namespace posenc {

const KernelTable* compiled_kernel_table(posenc_isa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case POSENC_ISA_BASELINE: return &arch::baseline_kernels();
    case POSENC_ISA_AVX2: return &arch::avx2_kernels();
    case POSENC_ISA_AVX512: return &arch::avx512_kernels();
#elif defined(__aarch64__)
    case POSENC_ISA_BASELINE:
    case POSENC_ISA_NEON: return &arch::neon_kernels();
#endif
    default: return nullptr;
  }
}

const KernelTable* kernel_table_for_cpu(posenc_isa isa) {
#if defined(__x86_64__)
  static const bool has_avx512_bf16 = cpu_has_avx512_bf16();
  if (isa == POSENC_ISA_AVX512 && has_avx512_bf16) return &arch::avx512_bf16_kernels();
#endif
  return compiled_kernel_table(isa);
}

}  // namespace posenc
