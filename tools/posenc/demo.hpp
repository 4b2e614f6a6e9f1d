// The sections of `posenc demo`, one per op family.
#pragma once

namespace posenc::cli {

// Each prints its results; returns false if a result disagreed with the
// reference loops.
bool demo_absolute();

}  // namespace posenc::cli
