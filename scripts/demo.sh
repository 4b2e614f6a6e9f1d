#!/usr/bin/env bash
# Builds posenc (Release) and runs `posenc demo` on its built-in inputs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc)" --target posenc_cli
"$root/build/tools/posenc/posenc" demo
