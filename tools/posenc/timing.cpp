#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace posenc::cli {

double median_seconds(const std::function<void()>& fn, int repeats) {
  fn();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[size_t(repeats / 2)];
}

}  // namespace posenc::cli
