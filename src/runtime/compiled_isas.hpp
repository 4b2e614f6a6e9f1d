// The ISA paths: one row per path of the C enum posenc_isa, the one table that
// names, ranks, CPU checks, oneDNN caps and kernel tables are read from
// (posenc_isa_name, posenc_isa_from_name, isa_rank, cpu_supports, the cap,
// compiled_kernel_table, kernel_table_for_cpu, kCompiledIsas, the tests, the
// benchmarks and the posenc tool). posenc::Isa (posenc/core.hpp) mirrors the
// C enum for C++ callers; nothing else lists the paths.
//
// How the table and the build agree: cmake/PosencIsa.cmake lists the paths it
// compiles for the target processor, with their flags, and generates
// posenc_compiled_paths.inc from that list; a row finds its kernel tables
// there by its name (arch/arch_tables.hpp). A row this build does not compile
// (NEON on x86-64, the x86 paths on aarch64) keeps its name and rank, has no
// kernels, and no CPU runs it. A new path is a row here, src/arch/<name>.cpp
// and its flags in cmake/PosencIsa.cmake.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include <oneapi/dnnl/dnnl_types.h>

#include "arch/arch_tables.hpp"
#include "posenc/core.h"
#include "runtime/cpu_features.hpp"

namespace posenc {

using KernelTableFn = const KernelTable& (*)();

struct IsaPath {
  posenc_isa isa;
  const char* name;           // lower case: posenc_isa_name, POSENC_MAX_ISA
  int rank;                   // runs under a cap of this rank or higher
  CpuFeatures features;       // what the CPU needs beyond the architecture's baseline
  dnnl_cpu_isa_t onednn_cap;  // oneDNN's cap while posenc is capped at this path (x86-64)
  bool compiled;              // this build compiles the path
  KernelTableFn kernels;      // null where this build does not compile the path
  // The path's table with kernels that need `extension_features` too, used
  // where the CPU has them (same results); null if the path has none.
  CpuFeatures extension_features;
  KernelTableFn extension_kernels;
};

namespace isa_table {

// Whether this build compiles the path `name`. Constant expressions test this
// rather than a kernel table's address, which GCC's sanitizer builds do not
// treat as a constant.
constexpr bool compiled_path([[maybe_unused]] std::string_view name) {
#define POSENC_COMPILED_PATH(path) \
  if (name == #path) return true;
#define POSENC_PATH_EXTENSION(path, extension)
#include "posenc_compiled_paths.inc"
#undef POSENC_COMPILED_PATH
#undef POSENC_PATH_EXTENSION
  return false;
}

// The kernel table of the compiled path `name`, or null.
constexpr KernelTableFn compiled_kernels([[maybe_unused]] std::string_view name) {
#define POSENC_COMPILED_PATH(path) \
  if (name == #path) return &arch::path##_kernels;
#define POSENC_PATH_EXTENSION(path, extension)
#include "posenc_compiled_paths.inc"
#undef POSENC_COMPILED_PATH
#undef POSENC_PATH_EXTENSION
  return nullptr;
}

// The kernel table of the compiled extension of the path `name`, or null.
constexpr KernelTableFn compiled_extension([[maybe_unused]] std::string_view name) {
#define POSENC_COMPILED_PATH(path)
#define POSENC_PATH_EXTENSION(path, extension) \
  if (name == #path) return &arch::extension##_kernels;
#include "posenc_compiled_paths.inc"
#undef POSENC_COMPILED_PATH
#undef POSENC_PATH_EXTENSION
  return nullptr;
}

constexpr IsaPath row(posenc_isa isa, const char* name, int rank, CpuFeatures features,
                      dnnl_cpu_isa_t onednn_cap, CpuFeatures extension_features = 0) {
  return {isa, name, rank, features, onednn_cap, compiled_path(name),
          compiled_kernels(name), extension_features, compiled_extension(name)};
}

}  // namespace isa_table

inline constexpr IsaPath kIsaPaths[] = {
    // SSE2, which every x86-64 has; SSE4.1 is oneDNN's lowest level.
    isa_table::row(POSENC_ISA_BASELINE, "baseline", 1, 0, dnnl_cpu_isa_sse41),
    // F16C, which the AVX2 and AVX-512 paths are compiled with too, comes with
    // AVX2 on every x86-64 processor (clang 14 cannot test it at run time).
    isa_table::row(POSENC_ISA_AVX2, "avx2", 2, kCpuAvx2 | kCpuFma, dnnl_cpu_isa_avx2),
    // AVX512-BF16, where the CPU has it, rounds the attention's probabilities
    // and multiplies bf16 pairs in its decode steps.
    isa_table::row(POSENC_ISA_AVX512, "avx512", 3,
                   kCpuAvx512F | kCpuAvx512Cd | kCpuAvx512Dq | kCpuAvx512Bw | kCpuAvx512Vl |
                       kCpuAvx2 | kCpuFma,
                   dnnl_cpu_isa_avx512_core_amx, kCpuAvx512Bf16),
    // Advanced SIMD, which every aarch64 has; posenc does not cap oneDNN there.
    // On x86-64 a neon cap is the baseline's rank, and caps oneDNN as it does.
    isa_table::row(POSENC_ISA_NEON, "neon", 1, 0, dnnl_cpu_isa_sse41),
};

// The row of `isa` (every path of the C enum, compiled or not); null for AUTO
// or an unknown value.
constexpr const IsaPath* find_isa_path(posenc_isa isa) {
  for (const IsaPath& path : kIsaPaths) {
    if (path.isa == isa) return &path;
  }
  return nullptr;
}

namespace isa_table {

constexpr std::size_t compiled_count() {
  std::size_t count = 0;
  for (const IsaPath& path : kIsaPaths) count += path.compiled ? 1 : 0;
  return count;
}

// The compiled paths, best (highest rank) first.
constexpr std::array<posenc_isa, compiled_count()> compiled_best_first() {
  std::array<const IsaPath*, compiled_count()> paths{};
  std::size_t count = 0;
  for (const IsaPath& path : kIsaPaths) {
    if (!path.compiled) continue;
    std::size_t at = count++;
    for (; at > 0 && paths[at - 1]->rank < path.rank; --at) paths[at] = paths[at - 1];
    paths[at] = &path;
  }
  std::array<posenc_isa, compiled_count()> isas{};
  for (std::size_t i = 0; i < count; ++i) isas[i] = paths[i]->isa;
  return isas;
}

constexpr std::size_t listed_count() {
  std::size_t count = 0;
#define POSENC_COMPILED_PATH(path) ++count;
#define POSENC_PATH_EXTENSION(path, extension)
#include "posenc_compiled_paths.inc"
#undef POSENC_COMPILED_PATH
#undef POSENC_PATH_EXTENSION
  return count;
}

constexpr bool compiled_ranks_distinct() {
  for (const IsaPath& a : kIsaPaths) {
    for (const IsaPath& b : kIsaPaths) {
      if (&a != &b && a.compiled && b.compiled && a.rank == b.rank) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace isa_table

static_assert(isa_table::compiled_count() == isa_table::listed_count(),
              "cmake/PosencIsa.cmake compiles a path that has no row in kIsaPaths");
static_assert(isa_table::compiled_ranks_distinct(),
              "two compiled paths share a rank: the cap could not order them");

// The paths this build compiles, best first: each has a kernel table of its
// own (src/arch/); whether the CPU runs it is posenc_isa_available's question.
inline constexpr auto kCompiledIsas = isa_table::compiled_best_first();

// The last of them, which every CPU of the architecture runs. BASELINE names
// it (on aarch64 that is NEON).
inline constexpr posenc_isa kBaselineIsa = kCompiledIsas.back();

// The row of the compiled path that runs `isa` (BASELINE: kBaselineIsa), or
// null if this build has none.
constexpr const IsaPath* compiled_isa_path(posenc_isa isa) {
  const IsaPath* path = find_isa_path(isa == POSENC_ISA_BASELINE ? kBaselineIsa : isa);
  return path != nullptr && path->compiled ? path : nullptr;
}

// Those the CPU supports under the ISA cap, best first: the paths a context
// can be made for now (runtime/isa_cap.cpp).
std::vector<posenc_isa> runnable_isas();

}  // namespace posenc
