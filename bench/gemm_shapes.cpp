// posenc_gemm_shapes: oneDNN's GEMM rate at the fused attention's block
// shapes, every thread multiplying its own as the attention's tasks do
// (cases/timing/machine.hpp), in fp32 and bf16: q k^T (rows x keys x d) and
// p v (rows x d x keys) for query blocks of 32 to 256 rows and key blocks
// of 512 to 2048 keys. Where the GEMMs decide an attention's time (AMX), it
// shows which block shapes they run fastest at (ops/attention/plan.cpp
// picks them), with no rebuild per shape. OMP_NUM_THREADS sets the threads.
#include <omp.h>

#include <cstdint>
#include <cstdio>

#include "cases/timing/machine.hpp"

int main() {
  using posenc::cases::own_gemms_team_gflops;
  const int threads = omp_get_max_threads();
  std::printf("oneDNN GEMMs at the attention's block shapes, each of %d thread%s multiplying "
              "its own; GFLOP/s a thread (0: no such GEMM here)\n\n",
              threads, threads == 1 ? "" : "s");
  std::printf("| type | d | keys | product | 32 rows | 64 rows | 128 rows | 256 rows |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const posenc_dtype type : {POSENC_F32, POSENC_BF16}) {
    for (const int64_t d : {64, 128}) {
      for (const int64_t keys : {512, 1024, 2048}) {
        for (const bool scores : {true, false}) {
          std::printf("| %s | %lld | %lld | %s |", type == POSENC_F32 ? "fp32" : "bf16",
                      static_cast<long long>(d), static_cast<long long>(keys),
                      scores ? "q k^T" : "p v");
          for (const int64_t rows : {32, 64, 128, 256}) {
            const double team = scores ? own_gemms_team_gflops(type, rows, keys, d)
                                       : own_gemms_team_gflops(type, rows, d, keys);
            std::printf(" %.0f |", team / threads);
          }
          std::printf("\n");
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}
