// One registration function per op family's benchmark file.
#pragma once

namespace posenc::bench {

void register_absolute_benchmarks();
void register_relative_benchmarks();

}  // namespace posenc::bench
