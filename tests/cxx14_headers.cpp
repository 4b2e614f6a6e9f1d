// The C++ API's headers compile as C++14, as the README promises, with
// every later extension an error: this file is compiled, never run.
#include "posenc/posenc.hpp"
