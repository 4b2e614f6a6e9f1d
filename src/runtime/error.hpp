// Internal errors: ops and validation throw posenc::Error, the class the C++
// API throws (posenc/error.hpp: one definition for the library and its
// callers); the C ABI turns it into a status code and the thread's last-error
// message (api/guard.hpp).
#pragma once

#include "posenc/error.hpp"
