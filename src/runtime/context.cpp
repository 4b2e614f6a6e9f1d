#include "runtime/context.hpp"

#include <omp.h>

#include <algorithm>

#include "runtime/isa_cap.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/openmp_fork.hpp"

namespace posenc {

ExecContext resolve_context(const posenc_context* context) {
  const posenc_isa isa = context != nullptr ? context->isa : best_isa_under_cap();
  const int requested = context != nullptr ? context->num_threads : 0;
  int threads = requested > 0 ? requested : std::min(omp_get_max_threads(), POSENC_MAX_THREADS);
  if (openmp_teams_lost_to_fork()) threads = 1;  // runtime/openmp_fork.hpp
  return ExecContext{isa, kernel_table_for_cpu(isa), threads};
}

}  // namespace posenc
