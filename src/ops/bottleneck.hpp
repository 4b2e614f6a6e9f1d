// BoTNet's MHSA over a feature map (posenc/attention.h): 1x1 projection,
// 2D-relative attention, NCHW output. Arguments validated by the caller.
#pragma once

#include <cstddef>

#include "posenc/attention.h"
#include "runtime/context.hpp"

namespace posenc::ops {

size_t bottleneck_workspace_bytes(const posenc_bottleneck_desc& desc, int threads);

// workspace: NULL (allocated here) or bottleneck_workspace_bytes() bytes.
void bottleneck_mhsa(const ExecContext& ctx, const posenc_bottleneck_desc& desc,
                     const void* fmap, const void* w_qkv, const void* rel_h, const void* rel_w,
                     void* out, void* workspace);

}  // namespace posenc::ops
