// The C ABI boundary: runs an entry point's body, turning exceptions into a
// status and the thread's last-error message.
#pragma once

#include <new>

#include "posenc/core.h"
#include "runtime/error.hpp"

namespace posenc {

// Sets the thread's last-error message to "function: what detail" in a fixed
// buffer (a message past 1023 bytes is cut): it allocates nothing, so it
// cannot fail while reporting that memory ran out.
void set_last_error(const char* function, const char* what, const char* detail = "") noexcept;

template <class Body>
posenc_status guard(const char* function, const Body& body) noexcept {
  try {
    body();
    return POSENC_OK;
  } catch (const Error& e) {
    set_last_error(function, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error(function, "out of memory");
    return POSENC_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(function, "internal error:", e.what());
    return POSENC_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(function, "internal error");
    return POSENC_ERROR_INTERNAL;
  }
}

}  // namespace posenc
