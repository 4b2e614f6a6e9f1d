// The C ABI boundary: runs an entry point's body, turning exceptions into a
// status and the thread's last-error message.
#pragma once

#include <new>
#include <string>

#include "posenc/core.h"
#include "runtime/error.hpp"

namespace posenc {

void set_last_error(const std::string& message);

template <class Body>
posenc_status guard(const char* function, const Body& body) noexcept {
  try {
    body();
    return POSENC_OK;
  } catch (const Error& e) {
    set_last_error(std::string(function) + ": " + e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error(std::string(function) + ": out of memory");
    return POSENC_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string(function) + ": internal error: " + e.what());
    return POSENC_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(std::string(function) + ": internal error");
    return POSENC_ERROR_INTERNAL;
  }
}

}  // namespace posenc
