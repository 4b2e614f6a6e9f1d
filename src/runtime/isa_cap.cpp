#include "runtime/isa_cap.hpp"

#include <pthread.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "runtime/compiled_isas.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/error.hpp"

namespace posenc {
namespace {

// Returns false if oneDNN already created a primitive and refuses the cap.
bool apply_onednn_cap(posenc_isa isa) {
#if defined(__x86_64__)
  const IsaPath* path = find_isa_path(isa);  // AUTO: no row, no cap
  return dnnl_set_max_cpu_isa(path != nullptr ? path->onednn_cap : dnnl_cpu_isa_all) ==
         dnnl_success;
#else
  (void)isa;
  return true;
#endif
}

// The same for the first call's cap, which must not throw (the calls that
// read the cap return no status): oneDNN's C call lets std::bad_alloc out.
bool apply_onednn_cap_noexcept(posenc_isa isa) noexcept {
  try {
    return apply_onednn_cap(isa);
  } catch (...) {
    return false;
  }
}

// Held by posenc_set_max_isa. fork() copies a lock as it is, so that a
// child forked while another thread held it would wait for it forever: it
// is taken before a fork, released after it in the parent and made anew in
// the child. Constant-initialized, so the handlers never make the cap
// state (which reads the environment and caps oneDNN).
std::mutex cap_mutex;

void lock_cap_before_fork() { cap_mutex.lock(); }
void unlock_cap_after_fork_in_parent() { cap_mutex.unlock(); }
void remake_cap_lock_in_child() { new (&cap_mutex) std::mutex; }

// Registered as the library loads (runtime/matmul_primitive.cpp's handlers say why).
[[maybe_unused]] const int cap_fork_handlers =
    pthread_atfork(lock_cap_before_fork, unlock_cap_after_fork_in_parent, remake_cap_lock_in_child);

class CapState {
 public:
  CapState() {
    posenc_isa isa;
    const EnvironmentCap asked = environment_isa_cap(&isa);
    if (asked == EnvironmentCap::kNone) return;
    const char* env = std::getenv("POSENC_MAX_ISA");
    if (asked == EnvironmentCap::kUnknown) {
      std::fprintf(stderr, "posenc: ignoring POSENC_MAX_ISA=%s (expected auto", env);
      for (const IsaPath& path : kIsaPaths) std::fprintf(stderr, ", %s", path.name);
      std::fprintf(stderr, ")\n");
      return;
    }
    // AUTO caps nothing, and leaves oneDNN's one cap per process to
    // posenc_set_max_isa. posenc's cap holds even where oneDNN's fails.
    if (isa != POSENC_ISA_AUTO && !apply_onednn_cap_noexcept(isa)) {
      std::fprintf(stderr, "posenc: POSENC_MAX_ISA=%s could not cap oneDNN, which already "
                   "had a cap or a primitive in this process, or had no memory\n", env);
    }
    cap_.store(isa);
  }

  posenc_isa get() const { return cap_.load(); }

  void set(posenc_isa isa) {
    std::lock_guard<std::mutex> lock(cap_mutex);
    if (isa != cap_.load() && !apply_onednn_cap(isa)) {
      throw Error(POSENC_ERROR_UNSUPPORTED,
                  "isa: oneDNN takes one cap per process, before its first primitive, and this "
                  "process has capped it or made a primitive already; set POSENC_MAX_ISA, or call "
                  "posenc_set_max_isa once before any other posenc call");
    }
    cap_.store(isa);
  }

 private:
  std::atomic<posenc_isa> cap_{POSENC_ISA_AUTO};
};

CapState& cap_state() {
  static CapState state;
  return state;
}

}  // namespace

int isa_rank(posenc_isa isa) {
  const IsaPath* path = find_isa_path(isa);
  return path != nullptr ? path->rank : std::numeric_limits<int>::max();
}

bool isa_of_name(const char* name, posenc_isa* isa) noexcept {
  const auto equals = [name](const char* known) {
    size_t i = 0;
    for (; name[i] != '\0' && known[i] != '\0'; ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) != known[i]) return false;
    }
    return name[i] == known[i];
  };
  if (equals("auto")) {
    *isa = POSENC_ISA_AUTO;
    return true;
  }
  for (const IsaPath& path : kIsaPaths) {
    if (equals(path.name)) {
      *isa = path.isa;
      return true;
    }
  }
  return false;
}

EnvironmentCap environment_isa_cap(posenc_isa* isa) noexcept {
  const char* env = std::getenv("POSENC_MAX_ISA");
  if (env == nullptr || *env == '\0') return EnvironmentCap::kNone;
  return isa_of_name(env, isa) ? EnvironmentCap::kNamed : EnvironmentCap::kUnknown;
}

std::string isa_names() {
  std::string names = "auto";
  for (const IsaPath& path : kIsaPaths) names += std::string(", ") + path.name;
  return names;
}

posenc_isa isa_cap() { return cap_state().get(); }

void set_isa_cap(posenc_isa isa) { cap_state().set(isa); }

namespace {

bool runs_under_cap(posenc_isa isa) {
  return isa_rank(isa) <= isa_rank(isa_cap()) && cpu_supports(isa);
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
  if (!cpu_supports(requested)) {
    throw Error(POSENC_ERROR_UNSUPPORTED, std::string(argument) + ": the " +
                                              posenc_isa_name(requested) +
                                              " path is not available on this CPU or build");
  }
  if (isa_rank(requested) > isa_rank(isa_cap())) {
    throw Error(POSENC_ERROR_UNSUPPORTED, std::string(argument) + ": " +
                                              posenc_isa_name(requested) + " is above the cap " +
                                              posenc_isa_name(isa_cap()));
  }
  return compiled_isa_path(requested)->isa;  // on aarch64 BASELINE is the NEON path
}

}  // namespace posenc
