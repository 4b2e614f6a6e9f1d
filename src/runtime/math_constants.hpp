// Mathematical constants shared by ops and kernels.
#pragma once

namespace posenc {

inline constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace posenc
