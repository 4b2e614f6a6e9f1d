#include "runtime/kernel_registry.hpp"

#include "runtime/compiled_isas.hpp"
#include "runtime/cpu_features.hpp"

namespace posenc {

const KernelTable* compiled_kernel_table(posenc_isa isa) {
  const IsaPath* path = compiled_isa_path(isa);
  return path != nullptr ? &path->kernels() : nullptr;
}

const KernelTable* kernel_table_for_cpu(posenc_isa isa) {
  const IsaPath* path = compiled_isa_path(isa);
  if (path == nullptr) return nullptr;
  if (path->extension_kernels != nullptr && cpu_has(path->extension_features)) {
    return &path->extension_kernels();
  }
  return &path->kernels();
}

bool runs_extension_kernels(posenc_isa isa, CpuFeatures features) {
  const IsaPath* path = compiled_isa_path(isa);
  return path != nullptr && path->extension_kernels != nullptr &&
         (path->extension_features & features) == features &&
         kernel_table_for_cpu(isa) == &path->extension_kernels();
}

}  // namespace posenc
