#include "runtime/isa_cap.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "runtime/compiled_isas.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/error.hpp"

namespace posenc {
namespace {

#if defined(__x86_64__)
dnnl_cpu_isa_t onednn_isa_for(posenc_isa isa) {
  switch (isa) {
    case POSENC_ISA_BASELINE: return dnnl_cpu_isa_sse41;
    case POSENC_ISA_AVX2: return dnnl_cpu_isa_avx2;
    case POSENC_ISA_AVX512: return dnnl_cpu_isa_avx512_core_amx;
    default: return dnnl_cpu_isa_all;
  }
}
#endif

// Returns false if oneDNN already created a primitive and refuses the cap.
bool apply_onednn_cap(posenc_isa isa) {
#if defined(__x86_64__)
  return dnnl_set_max_cpu_isa(onednn_isa_for(isa)) == dnnl_success;
#else
  (void)isa;
  return true;
#endif
}

class CapState {
 public:
  CapState() {
    const char* env = std::getenv("POSENC_MAX_ISA");
    if (env == nullptr || *env == '\0') return;
    posenc_isa isa;
    if (posenc_isa_from_name(env, &isa) != POSENC_OK) {
      std::fprintf(stderr, "posenc: ignoring POSENC_MAX_ISA=%s (expected avx512, avx2, baseline or neon)\n", env);
      return;
    }
    if (!apply_onednn_cap(isa)) {
      std::fprintf(stderr, "posenc: POSENC_MAX_ISA=%s could not cap oneDNN, which already "
                   "created a primitive in this process\n", env);
    }
    cap_.store(isa);
  }

  posenc_isa get() const { return cap_.load(); }

  void set(posenc_isa isa) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (isa != cap_.load() && !apply_onednn_cap(isa)) {
      throw Error(POSENC_ERROR_UNSUPPORTED,
                  "isa: oneDNN cannot be capped after its first primitive was created; "
                  "set POSENC_MAX_ISA or call posenc_set_max_isa before any other posenc call");
    }
    cap_.store(isa);
  }

 private:
  std::mutex mutex_;
  std::atomic<posenc_isa> cap_{POSENC_ISA_AUTO};
};

CapState& cap_state() {
  static CapState state;
  return state;
}

}  // namespace

int isa_rank(posenc_isa isa) {
  switch (isa) {
    case POSENC_ISA_BASELINE: return 1;
    case POSENC_ISA_NEON: return 1;
    case POSENC_ISA_AVX2: return 2;
    case POSENC_ISA_AVX512: return 3;
    default: return 100;
  }
}

posenc_isa max_isa() { return cap_state().get(); }

void set_max_isa(posenc_isa isa) { cap_state().set(isa); }

namespace {

bool runs_under_cap(posenc_isa isa) {
  return isa_rank(isa) <= isa_rank(max_isa()) && cpu_supports(isa);
}

}  // namespace

posenc_isa best_isa_under_cap() {  // on the path of every call without a context
  for (posenc_isa isa : kCompiledIsas) {
    if (runs_under_cap(isa)) return isa;
  }
  return kBaselineIsa;
}

std::vector<posenc_isa> runnable_isas() {
  std::vector<posenc_isa> isas;
  for (posenc_isa isa : kCompiledIsas) {
    if (runs_under_cap(isa)) isas.push_back(isa);
  }
  return isas;
}

posenc_isa resolve_isa(posenc_isa requested, const char* argument) {
  if (requested == POSENC_ISA_AUTO) return best_isa_under_cap();
  if (posenc_isa_name(requested) == nullptr) {
    throw Error(POSENC_ERROR_INVALID_ARGUMENT,
                std::string(argument) + ": unknown ISA value " + std::to_string(int(requested)));
  }
  if (!cpu_supports(requested)) {
    throw Error(POSENC_ERROR_UNSUPPORTED, std::string(argument) + ": the " +
                                              posenc_isa_name(requested) +
                                              " path is not available on this CPU or build");
  }
  if (isa_rank(requested) > isa_rank(max_isa())) {
    throw Error(POSENC_ERROR_UNSUPPORTED, std::string(argument) + ": " +
                                              posenc_isa_name(requested) + " is above the cap " +
                                              posenc_isa_name(max_isa()));
  }
  // On aarch64 the baseline path is the NEON path.
  return requested == POSENC_ISA_BASELINE ? kBaselineIsa : requested;
}

}  // namespace posenc
