// Mathematical constants shared by ops, kernels and references.
#pragma once

namespace posenc {

inline constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace posenc
