// Included only by the per-ISA files in src/arch/: instantiates every kernel
// for one xsimd arch and collects them into a KernelTable.
#pragma once

#include "kernels/absolute/absolute_impl.hpp"
#include "kernels/attention/attention_bias_impl.hpp"
#include "kernels/attention/attention_impl.hpp"
#include "kernels/bias/position_bias_impl.hpp"
#include "kernels/elementwise/elementwise_impl.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/relative/relative_impl.hpp"
#include "kernels/resize/resize_impl.hpp"
#include "kernels/rope/rope_impl.hpp"

namespace posenc {

template <class Arch>
constexpr KernelTable make_kernel_table() {
  return KernelTable{kernels::make_elementwise_kernels<Arch>(),
                     kernels::make_absolute_kernels<Arch>(),
                     kernels::make_attention_kernels<Arch>(),
                     kernels::make_attention_bias_kernels<Arch>(),
                     kernels::make_position_bias_kernels<Arch>(),
                     kernels::make_relative_kernels<Arch>(),
                     kernels::make_resize_kernels<Arch>(),
                     kernels::make_rope_kernels<Arch>()};
}

}  // namespace posenc
