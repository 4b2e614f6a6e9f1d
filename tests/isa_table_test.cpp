// The ISA table (runtime/compiled_isas.hpp) against what the C ABI and the CPU
// say: names that parse back, ranks in the order the cap relies on, a kernel
// table of its own for every compiled path, availability as the CPU reports it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "posenc/posenc.h"
#include "runtime/compiled_isas.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/kernel_registry.hpp"

namespace posenc::test {
namespace {

// Every path of the C enum, whatever this build compiles.
constexpr posenc_isa kAbiPaths[] = {POSENC_ISA_BASELINE, POSENC_ISA_AVX2, POSENC_ISA_AVX512,
                                    POSENC_ISA_NEON};

TEST(IsaTable, CompiledPathsParseBackFromTheirNames) {
  for (posenc_isa isa : kCompiledIsas) {
    const char* name = posenc_isa_name(isa);
    ASSERT_NE(name, nullptr) << int(isa);
    std::string upper(name);
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    for (const std::string& spelling : {std::string(name), upper}) {
      posenc_isa parsed = POSENC_ISA_AUTO;
      ASSERT_EQ(posenc_isa_from_name(spelling.c_str(), &parsed), POSENC_OK) << spelling;
      EXPECT_EQ(parsed, isa) << spelling;
    }
  }
}

TEST(IsaTable, EveryPathOfTheAbiHasItsOwnName) {
  std::set<std::string> names{posenc_isa_name(POSENC_ISA_AUTO)};
  for (posenc_isa isa : kAbiPaths) {
    ASSERT_NE(posenc_isa_name(isa), nullptr) << int(isa);
    EXPECT_TRUE(names.insert(posenc_isa_name(isa)).second) << posenc_isa_name(isa);
  }
  // An unknown name is refused with a message that lists every accepted name.
  posenc_isa parsed = POSENC_ISA_AUTO;
  ASSERT_EQ(posenc_isa_from_name("sse9", &parsed), POSENC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(parsed, POSENC_ISA_AUTO);
  const std::string message = posenc_last_error();
  EXPECT_NE(message.find("\"sse9\""), std::string::npos) << message;
  for (const std::string& name : names) {
    EXPECT_NE(message.find(name), std::string::npos) << name << " missing in: " << message;
  }
}

TEST(IsaTable, CompiledPathsAreBestFirstDownToTheBaseline) {
  ASSERT_FALSE(kCompiledIsas.empty());
  for (size_t i = 1; i < kCompiledIsas.size(); ++i) {
    EXPECT_GT(isa_rank(kCompiledIsas[i - 1]), isa_rank(kCompiledIsas[i]))
        << posenc_isa_name(kCompiledIsas[i - 1]) << " before " << posenc_isa_name(kCompiledIsas[i]);
  }
  // A CPU that runs a path runs every path ranked below it.
  for (size_t i = 1; i < kCompiledIsas.size(); ++i) {
    const CpuFeatures above = find_isa_path(kCompiledIsas[i - 1])->features;
    const CpuFeatures below = find_isa_path(kCompiledIsas[i])->features;
    EXPECT_EQ(below & ~above, 0u) << posenc_isa_name(kCompiledIsas[i]);
  }
  EXPECT_EQ(kCompiledIsas.back(), kBaselineIsa);
  EXPECT_LT(isa_rank(kBaselineIsa), isa_rank(POSENC_ISA_AUTO));
  // BASELINE runs everywhere and names the last compiled path.
  int available = 0;
  ASSERT_EQ(posenc_isa_available(POSENC_ISA_BASELINE, &available), POSENC_OK);
  EXPECT_EQ(available, 1);
  EXPECT_EQ(compiled_kernel_table(POSENC_ISA_BASELINE), compiled_kernel_table(kBaselineIsa));
}

TEST(IsaTable, EveryCompiledPathHasAKernelTableOfItsOwn) {
  std::set<const KernelTable*> tables;
  for (posenc_isa isa : kCompiledIsas) {
    const KernelTable* table = compiled_kernel_table(isa);
    ASSERT_NE(table, nullptr) << posenc_isa_name(isa);
    EXPECT_TRUE(tables.insert(table).second) << posenc_isa_name(isa);
    // Each path's kernels are its own instantiations, not another path's.
    for (posenc_isa other : kCompiledIsas) {
      if (other != isa) {
        EXPECT_NE(table->relative.gather_row, compiled_kernel_table(other)->relative.gather_row);
      }
    }
    // The table ops run differs at most in the kernels of an extension.
    const KernelTable* for_cpu = kernel_table_for_cpu(isa);
    ASSERT_NE(for_cpu, nullptr);
    EXPECT_EQ(for_cpu->relative.gather_row, table->relative.gather_row);
    EXPECT_EQ(for_cpu->attention.scale_f32, table->attention.scale_f32);
    EXPECT_EQ(for_cpu->attention.scale_to_bf16, table->attention.scale_to_bf16);
  }
  for (posenc_isa isa : kAbiPaths) {
    const bool compiled = std::find(kCompiledIsas.begin(), kCompiledIsas.end(), isa) !=
                          kCompiledIsas.end();
    if (!compiled && isa != POSENC_ISA_BASELINE) {
      EXPECT_EQ(compiled_kernel_table(isa), nullptr) << posenc_isa_name(isa);
    }
  }
}

// The CPU checks of the table against the features each path is documented
// to need (posenc/core.h).
TEST(IsaTable, AvailabilityIsWhatTheCpuReports) {
  auto available = [](posenc_isa isa) {
    int result = -1;
    EXPECT_EQ(posenc_isa_available(isa, &result), POSENC_OK);
    return result;
  };
#if defined(__x86_64__)
  EXPECT_EQ(available(POSENC_ISA_AVX2),
            int(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
  EXPECT_EQ(available(POSENC_ISA_AVX512),
            int(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl")));
  EXPECT_EQ(available(POSENC_ISA_NEON), 0);
#elif defined(__aarch64__)
  EXPECT_EQ(available(POSENC_ISA_NEON), 1);
  for (posenc_isa isa : {POSENC_ISA_AVX2, POSENC_ISA_AVX512}) EXPECT_EQ(available(isa), 0);
#endif
  EXPECT_EQ(available(POSENC_ISA_BASELINE), 1);
}

}  // namespace
}  // namespace posenc::test
