// The table of kernels for one ISA path: one member per kernel family. Each
// family's header declares its function-pointer struct; the per-ISA files in
// src/arch/ fill a table with the kernels instantiated for their arch.
#pragma once

#include "kernels/absolute/absolute_kernels.hpp"
#include "kernels/attention/attention_bias_kernels.hpp"
#include "kernels/attention/attention_kernels.hpp"
#include "kernels/bias/position_bias_kernels.hpp"
#include "kernels/elementwise/elementwise_kernels.hpp"
#include "kernels/relative/relative_kernels.hpp"
#include "kernels/resize/resize_kernels.hpp"
#include "kernels/rope/rope_kernels.hpp"

namespace posenc {

struct KernelTable {
  ElementwiseKernels elementwise;
  AbsoluteKernels absolute;
  AttentionKernels attention;
  AttentionBiasKernels attention_bias;
  PositionBiasKernels position_bias;
  RelativeKernels relative;
  ResizeKernels resize;
  RopeKernels rope;
};

}  // namespace posenc
