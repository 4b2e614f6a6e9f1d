// C ABI: errors, versions, ISA selection, contexts, the memory kept between
// calls, bf16 scalars.
#include <cstdio>
#include <cstring>
#include <string>

#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/rope/frequencies.hpp"
#include "posenc/core.h"
#include "runtime/compiled_isas.hpp"
#include "runtime/context.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/matmul.hpp"
#include "runtime/thread_state.hpp"
#include "runtime/workspace.hpp"

namespace posenc {
namespace {
thread_local char last_error_message[1024] = "";
}  // namespace

void set_last_error(const char* function, const char* what, const char* detail) noexcept {
  std::snprintf(last_error_message, sizeof last_error_message, "%s: %s%s%s", function, what,
                *detail != '\0' ? " " : "", detail);
}

}  // namespace posenc

using namespace posenc;

namespace {

// isa is a named path, or AUTO where `allow_auto`. A negative value is
// rejected before isa is loaded (the enum's range is [0, INT32_MAX]).
void require_isa(const posenc_isa& isa, bool allow_auto) {
  const int32_t value = enum_value(isa);
  if (value < 0 || posenc_isa_name(isa) == nullptr) {
    invalid("isa: unknown ISA value " + std::to_string(value));
  }
  if (value == POSENC_ISA_AUTO && !allow_auto) invalid("isa: AUTO is not a path; name one");
}

}  // namespace

extern "C" {

const char* posenc_status_string(posenc_status status) {
  switch (enum_value(status)) {
    case POSENC_OK: return "ok";
    case POSENC_ERROR_NULL_POINTER: return "null pointer";
    case POSENC_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case POSENC_ERROR_SHAPE_MISMATCH: return "shape mismatch";
    case POSENC_ERROR_OVERFLOW: return "size overflow";
    case POSENC_ERROR_ALIASING: return "aliasing not allowed";
    case POSENC_ERROR_UNSUPPORTED: return "unsupported";
    case POSENC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case POSENC_ERROR_INTERNAL: return "internal error";
    case POSENC_STATUS_MAX_ENUM: break;
  }
  return "unknown status";
}

const char* posenc_last_error(void) { return last_error_message; }

const char* posenc_version(void) { return POSENC_VERSION_STRING; }

const char* posenc_isa_name(posenc_isa isa) {
  const int32_t value = enum_value(isa);
  if (value == POSENC_ISA_AUTO) return "auto";
  if (value < 0) return nullptr;  // no enumerator: never read as the enum
  const IsaPath* path = find_isa_path(isa);
  return path != nullptr ? path->name : nullptr;
}

posenc_status posenc_isa_from_name(const char* name, posenc_isa* isa) {
  return guard("posenc_isa_from_name", [&] {
    require_not_null(name, "name");
    require_not_null(isa, "isa");
    if (isa_of_name(name, isa)) return;
    invalid("name: unknown ISA \"" + std::string(name) + "\" (expected one of " + isa_names() +
            ")");
  });
}

posenc_status posenc_isa_available(posenc_isa isa, int* available) {
  return guard("posenc_isa_available", [&] {
    require_not_null(available, "available");
    require_isa(isa, false);
    *available = cpu_supports(isa) ? 1 : 0;
  });
}

posenc_status posenc_set_max_isa(posenc_isa isa) {
  return guard("posenc_set_max_isa", [&] {
    require_isa(isa, true);
    set_isa_cap(isa);
  });
}

posenc_isa posenc_max_isa(void) { return isa_cap(); }

posenc_isa posenc_best_isa(void) { return best_isa_under_cap(); }

posenc_status posenc_context_create(posenc_isa isa, int num_threads, posenc_context** context) {
  return guard("posenc_context_create", [&] {
    require_not_null(context, "context");
    require_non_negative(num_threads, "num_threads");
    if (num_threads > POSENC_MAX_THREADS) {
      invalid("num_threads (" + std::to_string(num_threads) + ") is above the maximum, " +
              std::to_string(POSENC_MAX_THREADS) + " (POSENC_MAX_THREADS)");
    }
    require_isa(isa, true);
    const posenc_isa resolved = resolve_isa(isa, "isa");
    *context = new posenc_context{resolved, num_threads};
  });
}

posenc_status posenc_set_primitive_cache_capacity(int64_t capacity) {
  return guard("posenc_set_primitive_cache_capacity", [&] {
    if (capacity < 1) {
      invalid("capacity (" + std::to_string(capacity) + ") must be at least 1");
    }
    set_matmul_cache_capacity(capacity);
  });
}

int64_t posenc_primitive_cache_capacity(void) { return matmul_cache_capacity(); }

int64_t posenc_primitive_cache_size(void) { return matmul_cache_size(); }

int64_t posenc_primitive_cache_evictions(void) { return matmul_cache_evictions(); }

void posenc_release_thread_memory(void) {
  // At thread exit, after posenc's state began to end: what is left is freed
  // by its destructors as the thread ends.
  if (thread_state_ended()) return;
  release_kept_buffers();
  release_gemm_slots();
  ops::release_thread_rope_angles();
}

void posenc_context_destroy(posenc_context* context) { delete context; }

posenc_isa posenc_context_isa(const posenc_context* context) {
  return resolve_context(context).isa;
}

int posenc_context_num_threads(const posenc_context* context) {
  return context != nullptr ? context->num_threads : 0;
}

// The scalar twin of the f32_to_bf16 kernel's bf16_high_bits, which must stay
// an arch template; bf16_kernels_test checks every ISA's kernel against this bit for bit.
uint16_t posenc_f32_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((bits >> 16) | 0x40u);
  return uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float posenc_bf16_to_f32(uint16_t value) {
  const uint32_t bits = uint32_t(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

}  // extern "C"
