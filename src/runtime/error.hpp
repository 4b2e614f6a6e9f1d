// Internal errors: ops and validation throw posenc::Error; the C ABI turns it
// into a status code and the thread's last-error message (api/guard.hpp).
#pragma once

#include <stdexcept>
#include <string>

#include "posenc/core.h"

namespace posenc {

class Error : public std::runtime_error {
 public:
  Error(posenc_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  posenc_status status() const { return status_; }

 private:
  posenc_status status_;
};

}  // namespace posenc
