// Argument checks of the RoPE entry points; each throws posenc::Error naming
// the argument (api/validate.hpp for the shared ones).
#pragma once

#include <cstdint>

#include "posenc/rope.h"

namespace posenc {

// Every field the config's scaling uses (names the field, e.g. "rotary_dim").
void require_rope_config(const posenc_rope_config& config);

// Every position of batch x tokens inside [0, limit); `limit_name` says what
// bounds it in the message. NULL positions means offset 0.
void require_rope_positions(const posenc_rope_positions* positions, int64_t batch,
                            int64_t tokens, int64_t limit, const char* limit_name);

// Bytes of the ids of positions (0 without ids), after checking their type
// and alignment.
int64_t rope_ids_bytes(const posenc_rope_positions* positions, int64_t batch, int64_t tokens);

}  // namespace posenc
