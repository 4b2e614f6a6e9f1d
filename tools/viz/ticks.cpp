#include "ticks.hpp"

namespace posenc::viz {
namespace {

int floor_mod(int a, int m) { return ((a % m) + m) % m; }

}  // namespace

std::vector<int> tick_indices(int count, int first, int cell, int min_gap, int max_ticks) {
  static constexpr int kMantissas[] = {1, 2, 5};
  for (long long decade = 1;; decade *= 10) {
    for (int mantissa : kMantissas) {
      const long long step = mantissa * decade;
      const bool spaced = step * cell >= min_gap;
      const bool few = (count - 1) / step + 1 <= max_ticks;
      if ((spaced && few) || step >= count) {
        const int s = int(step);
        std::vector<int> ticks;
        for (int k = floor_mod(-first, s); k < count; k += s) ticks.push_back(k);
        if (ticks.empty()) ticks.push_back(0);
        return ticks;
      }
    }
  }
}

}  // namespace posenc::viz
