/* posenc: positional encodings and relative-position attention for CPUs.
 * The C ABI; include this header (or posenc.hpp from C++). */
#ifndef POSENC_POSENC_H
#define POSENC_POSENC_H

#include "posenc/core.h"
#include "posenc/absolute.h"
#include "posenc/attention.h"
#include "posenc/bias.h"
#include "posenc/relative.h"
#include "posenc/rope.h"

#endif /* POSENC_POSENC_H */
