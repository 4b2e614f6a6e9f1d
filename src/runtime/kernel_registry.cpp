#include "runtime/kernel_registry.hpp"

#include "arch/arch_tables.hpp"

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

}  // namespace posenc
