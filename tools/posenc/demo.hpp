// The sections of `posenc demo`, one per op family.
#pragma once

#include <string>
#include <vector>

#include "checks.hpp"

namespace posenc::cli {

// Each prints its results; returns false if a result disagreed with the
// reference loops.
bool demo_absolute();
bool demo_attention();
bool demo_relative();
bool demo_rope();

// Runs the checks on the default context and prints their errors; false if
// any exceeds its tolerance.
bool demo_checks(const std::vector<Check>& checks);

// Times the benchmark cases of these ops on each ISA path, with the speedup
// over each case's baseline.
void demo_cases(const std::vector<std::string>& ops);

}  // namespace posenc::cli
