// posenc info: what the machine offers and what posenc runs.
#include <omp.h>

#include <cstdio>

#include "cases/timing/machine.hpp"
#include "commands.hpp"
#include "posenc/posenc.h"
#include "runtime/compiled_isas.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/matmul.hpp"

namespace posenc::cli {

int run_info(int, char**) {
  std::printf("posenc %s\n\nISA paths of this build and CPU:\n", posenc_version());
  const posenc_isa cap = posenc_max_isa();
  const posenc_isa best = posenc_best_isa();
  // The first path of this build (best first) the CPU has; the last, the
  // baseline, every CPU has.
  posenc_isa best_uncapped = POSENC_ISA_AUTO;
  for (posenc_isa isa : kCompiledIsas) {
    int available = 0;
    posenc_isa_available(isa, &available);
    std::printf("  %-9s %s\n", posenc_isa_name(isa), available ? "yes" : "no (CPU lacks it)");
    if (available && best_uncapped == POSENC_ISA_AUTO) best_uncapped = isa;
  }
  std::printf("\npath in use: %s\n", posenc_isa_name(best));
  if (cap == POSENC_ISA_AUTO) {
    std::printf("  why: the best path the CPU supports (no cap; set POSENC_MAX_ISA to cap)\n");
  } else {
    posenc_isa asked;
    const bool by_environment =
        posenc::environment_isa_cap(&asked) == posenc::EnvironmentCap::kNamed && asked == cap;
    const char* by = by_environment ? "POSENC_MAX_ISA" : "posenc_set_max_isa";
    if (best == best_uncapped) {
      std::printf("  why: the best path the CPU supports (the cap %s set by %s is not below it)\n",
                  posenc_isa_name(cap), by);
    } else {
      std::printf("  why: capped at %s by %s\n", posenc_isa_name(cap), by);
    }
  }
  std::printf("\noneDNN %s\n", onednn_version_string());
  std::printf("  dispatches to: %s\n", onednn_isa_string());
  std::printf("  fp32 matmul implementation: %s\n", onednn_matmul_impl(POSENC_F32));
  std::printf("  bf16 matmul implementation: %s\n", onednn_matmul_impl(POSENC_BF16));
  std::printf("  bf16 attention GEMMs: %s\n",
              bf16_gemms_outpace_fp32() ? "bf16 (AMX, or AMD's AVX512-BF16)"
              : onednn_bf16_gemm_is_native()
                  ? "fp32 on bf16 widened by posenc (AVX512-BF16 without AMX, not AMD's: "
                    "oneDNN's bf16 GEMMs measured at 0.6x its fp32 ones on such a CPU)"
                  : "fp32 on bf16 widened by posenc (oneDNN has no bf16 in hardware here)");
  std::printf("\nthreads: %d (OpenMP default; OMP_NUM_THREADS or a context sets it)\n",
              cases::op_threads());
  if (omp_get_max_threads() > POSENC_MAX_THREADS) {
    std::printf("  OpenMP's default, %d, capped at POSENC_MAX_THREADS: no op runs on more\n",
                omp_get_max_threads());
  }
  return 0;
}

}  // namespace posenc::cli
