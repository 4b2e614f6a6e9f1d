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

// Registered as the library loads (runtime/matmul_primitive.cpp's handlers say why).
[[maybe_unused]] const int fork_handler = pthread_atfork(nullptr, nullptr, on_fork_child);

}  // namespace

void note_openmp_team() { led_team = true; }

bool openmp_teams_lost_to_fork() { return teams_lost.load(std::memory_order_relaxed); }

}  // namespace posenc
