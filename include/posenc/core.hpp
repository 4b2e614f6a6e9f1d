// posenc C++ API: a header-only layer over the C ABI that turns status codes
// into exceptions and owns contexts. Include posenc/posenc.hpp.
#pragma once

#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "posenc/core.h"
#include "posenc/error.hpp"

namespace posenc {

// Throws posenc::Error with the thread's last-error message unless status is POSENC_OK.
inline void check(posenc_status status) {
  if (status != POSENC_OK) throw Error(status, posenc_last_error());
}

namespace detail {

// Resizes v to n elements, or throws posenc::Error whose message starts
// with `what` ("function: argument", as the C ABI's messages do): OVERFLOW
// where n elements are more bytes than int64 counts (as the C functions say
// of such a size), OUT_OF_MEMORY where std::vector would throw
// std::bad_alloc or std::length_error.
template <class T>
void allocate(std::vector<T>& v, uint64_t n, const char* what) {
  if (n > uint64_t(INT64_MAX) / sizeof(T)) {
    throw Error(POSENC_ERROR_OVERFLOW, std::string(what) + ": the size overflows");
  }
  try {
    if (n > v.max_size()) throw std::bad_alloc();
    v.resize(size_t(n));
  } catch (const std::bad_alloc&) {
    throw Error(POSENC_ERROR_OUT_OF_MEMORY, std::string(what) + ": no memory for " +
                                                std::to_string(n) + " elements");
  }
}

// `value` as the C enum CEnum, whose values run from 0 to its MAX_ENUM
// (0x7FFFFFFF): the C ABI refuses one it does not know. A negative value is
// outside that range, so no CEnum can hold it (forming one is undefined):
// posenc::Error (INVALID_ARGUMENT) names `what` ("function: argument").
template <class CEnum, class Enum>
CEnum c_enum(Enum value, const char* what) {
  const int raw = static_cast<int>(value);
  if (raw < 0) {
    throw Error(POSENC_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": unknown value " + std::to_string(raw));
  }
  return static_cast<CEnum>(raw);
}

// a * b and a + b, or posenc::Error (OVERFLOW) whose message starts with
// `what` where int64 cannot hold them (for sizes that the C ABI would
// otherwise be given wrapped).
inline int64_t checked_product(int64_t a, int64_t b, const char* what) {
  const bool overflows = a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
                               : (b > 0 ? a < INT64_MIN / b : a != 0 && b < INT64_MAX / a);
  if (overflows) throw Error(POSENC_ERROR_OVERFLOW, std::string(what) + ": the size overflows");
  return a * b;
}
inline int64_t checked_sum(int64_t a, int64_t b, const char* what) {
  if (b > 0 ? a > INT64_MAX - b : a < INT64_MIN - b) {
    throw Error(POSENC_ERROR_OVERFLOW, std::string(what) + ": the size overflows");
  }
  return a + b;
}

}  // namespace detail

// The paths of the C enum posenc_isa, value for value.
enum class Isa {
  automatic = POSENC_ISA_AUTO,
  baseline = POSENC_ISA_BASELINE,
  avx2 = POSENC_ISA_AVX2,
  avx512 = POSENC_ISA_AVX512,
  neon = POSENC_ISA_NEON,
};

// "0.11.0", and a status's static name ("invalid argument").
inline const char* version() { return posenc_version(); }
inline const char* status_string(posenc_status status) { return posenc_status_string(status); }

// The path's name ("avx2", or "auto"); posenc::Error for a value that is
// not a posenc_isa.
inline const char* isa_name(Isa isa) {
  const char* name = posenc_isa_name(detail::c_enum<posenc_isa>(isa, "posenc::isa_name: isa"));
  if (name == nullptr) {
    throw Error(POSENC_ERROR_INVALID_ARGUMENT, "posenc::isa_name: isa (" +
                                                   std::to_string(static_cast<int>(isa)) +
                                                   ") is not a posenc_isa");
  }
  return name;
}
// The path a name stands for, as POSENC_MAX_ISA reads it ("avx2", "AVX512", ...).
inline Isa isa_from_name(const char* name) {
  posenc_isa isa = POSENC_ISA_AUTO;
  check(posenc_isa_from_name(name, &isa));  // NULL: refused by name
  return Isa(isa);
}
inline Isa isa_from_name(const std::string& name) {
  if (name.find('\0') != std::string::npos) {  // the C function would read up to it
    throw Error(POSENC_ERROR_INVALID_ARGUMENT, "posenc::isa_from_name: name holds a NUL");
  }
  return isa_from_name(name.c_str());
}
inline bool isa_available(Isa isa) {
  int available = 0;
  check(posenc_isa_available(detail::c_enum<posenc_isa>(isa, "posenc::isa_available: isa"),
                             &available));
  return available != 0;
}
inline void set_max_isa(Isa isa) {
  check(posenc_set_max_isa(detail::c_enum<posenc_isa>(isa, "posenc::set_max_isa: isa")));
}
inline Isa max_isa() { return Isa(posenc_max_isa()); }
inline Isa best_isa() { return Isa(posenc_best_isa()); }

// The oneDNN primitive cache (posenc_set_primitive_cache_capacity).
inline void set_primitive_cache_capacity(int64_t capacity) {
  check(posenc_set_primitive_cache_capacity(capacity));
}
inline int64_t primitive_cache_capacity() { return posenc_primitive_cache_capacity(); }
inline int64_t primitive_cache_size() { return posenc_primitive_cache_size(); }
inline int64_t primitive_cache_evictions() { return posenc_primitive_cache_evictions(); }

// Frees what the calling thread keeps between calls
// (posenc_release_thread_memory).
inline void release_thread_memory() { posenc_release_thread_memory(); }

// bf16 bits of a float, rounded to nearest even (NaN stays NaN), and back.
inline uint16_t f32_to_bf16(float value) { return posenc_f32_to_bf16(value); }
inline float bf16_to_f32(uint16_t value) { return posenc_bf16_to_f32(value); }

// Owns a posenc_context: the ISA path and thread count of the calls made with
// it. A default-constructed Context, and one moved from, uses the process
// default (the best path under the cap, OpenMP's thread count). Move-only;
// safe to share by reference across threads. Its destructor may run at
// process exit (a static Context): core.h allows posenc_context_destroy
// and posenc_rope_cache_destroy then.
class Context {
 public:
  Context() = default;
  explicit Context(Isa isa, int num_threads = 0) {
    check(posenc_context_create(detail::c_enum<posenc_isa>(isa, "posenc::Context: isa"),
                                num_threads, &handle_));
  }
  Context(Context&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Context& operator=(Context&& other) noexcept {
    if (this != &other) {
      posenc_context_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() { posenc_context_destroy(handle_); }

  Isa isa() const { return Isa(posenc_context_isa(handle_)); }
  int num_threads() const { return posenc_context_num_threads(handle_); }
  posenc_context* get() const { return handle_; }

 private:
  posenc_context* handle_ = nullptr;
};

}  // namespace posenc
