// posenc::Error, the exception of the C++ API (and, inside the library, of
// everything below the C ABI, which turns it back into a status). Included by
// posenc/core.hpp.
#pragma once

#include <stdexcept>
#include <string>

#include "posenc/core.h"

namespace posenc {

// Thrown by every C++ wrapper when the C call fails; what() is the C ABI's
// message, which names the function and the bad argument (a wrapper's own
// refusals, of sizes it cannot allocate, are worded the same way). Where
// memory is too short even for that message, std::bad_alloc is thrown.
class Error : public std::runtime_error {
 public:
  Error(posenc_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  posenc_status status() const noexcept { return status_; }

 private:
  posenc_status status_;
};

}  // namespace posenc
