// posenc: the C++ API (header-only, over the C ABI of posenc/posenc.h).
#pragma once

#include "posenc/posenc.h"
#include "posenc/core.hpp"
#include "posenc/absolute.hpp"
#include "posenc/attention.hpp"
#include "posenc/bias.hpp"
#include "posenc/relative.hpp"
#include "posenc/rope.hpp"
