#include "runtime/openmp_fork.hpp"

#include <pthread.h>

#include <atomic>

namespace posenc {
namespace {

thread_local bool led_team = false;
std::atomic<bool> teams_lost{false};

// Runs in the child on the only thread there, the forking thread's copy,
// whose led_team is the forking thread's. The flag then stays set in the
// child's own children: the lost team is inherited with the thread.
void on_fork_child() {
  if (led_team) teams_lost.store(true, std::memory_order_relaxed);
}

}  // namespace

void note_openmp_team() {
  if (led_team) return;
  static const int registered = pthread_atfork(nullptr, nullptr, on_fork_child);
  static_cast<void>(registered);  // fails only without memory for the entry
  led_team = true;
}

bool openmp_teams_lost_to_fork() { return teams_lost.load(std::memory_order_relaxed); }

}  // namespace posenc
