#!/usr/bin/env bash
# Installs a built posenc into a temporary prefix and builds and runs the
# examples against it, once through find_package(posenc) and once through
# pkg-config, and the C example in a C-only project and against the static
# library; checks first that the static target names each library it links
# by a file that exists and is no compiler's lib*.so link. Usage:
# check-install.sh BUILD_DIR
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: check-install.sh BUILD_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
version=$(sed -n 's/^project(posenc VERSION \([0-9]*\.[0-9]*\).*/\1/p' "$root/CMakeLists.txt")

cmake --install "$build" --prefix "$prefix" >/dev/null
echo "installed into a temporary prefix:"
(cd "$prefix" && find . -type f | sort | sed 's/^/  /')

echo "== the static target names runtimes, not a compiler's links to them"
# (A compiler's folder holds libgomp.so, a link to libgomp.so.1 that goes
# with that compiler version.)
targets=$(find "$prefix" -name posencTargets.cmake)
mapfile -t named < <(sed -n 's/.*INTERFACE_LINK_LIBRARIES "\(.*\)"/\1/p' "$targets" | tr ';' '\n' |
  grep '^/' || true)
for library in "${named[@]}"; do
  [[ -e $library ]] || { echo "the static target names $library, which does not exist" >&2; exit 1; }
  if [[ -L $library && $library == *.so ]]; then
    echo "the static target names $library, a link to $(readlink "$library")" >&2
    exit 1
  fi
  echo "  $library"
done

echo "== examples through find_package(posenc)"
cmake -S "$root/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples" -j "$(nproc)" >/dev/null
LD_LIBRARY_PATH="$prefix/lib" "$work/examples/encode_c"
LD_LIBRARY_PATH="$prefix/lib" "$work/examples/serving" 2 200

# A project of its own, of LANGUAGES $1, linking encode.c to posenc::$2.
consumer() {
  local dir="$work/consumer_$2"
  mkdir -p "$dir"
  printf '%s\n' "cmake_minimum_required(VERSION 3.25)" "project(consumer LANGUAGES $1)" \
    "find_package(posenc $version REQUIRED)" "add_executable(encode_c \"$root/examples/encode.c\")" \
    "target_link_libraries(encode_c PRIVATE posenc::$2 m)" > "$dir/CMakeLists.txt"
  cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$dir/build" >/dev/null
  LD_LIBRARY_PATH="$prefix/lib" "$dir/build/encode_c" >/dev/null
}
echo "== a C-only project through find_package(posenc)"
consumer C posenc
echo "== the static library through find_package(posenc)"
consumer "C CXX" posenc_static

echo "== examples through pkg-config"
# pkg-config escapes the spaces of a path with backslashes: eval splits its
# output as the shell would.
pcdir=$(dirname "$(find "$prefix" -name posenc.pc)")
libdir=$(dirname "$pcdir")
export PKG_CONFIG_PATH="$pcdir"
eval "flags=($(pkg-config --cflags --libs posenc))"
cc -std=c11 -Wall -Wextra -Werror "$root/examples/encode.c" -o "$work/encode_pc" "${flags[@]}" -lm
LD_LIBRARY_PATH="$libdir" "$work/encode_pc"
c++ -std=c++17 -O2 -Wall -Wextra -Werror "$root/examples/serving.cpp" -o "$work/serving_pc" \
  "${flags[@]}" -pthread
LD_LIBRARY_PATH="$libdir" "$work/serving_pc" 2 200
echo "== the static library through pkg-config --static"
eval "flags=($(pkg-config --cflags --static --libs posenc))"
# -lposenc would find the shared library beside the static one: the archive
# takes its place.
static_flags=()
for flag in "${flags[@]}"; do
  if [[ $flag == -lposenc ]]; then static_flags+=("$libdir/libposenc.a"); else static_flags+=("$flag"); fi
done
cc -std=c11 -DPOSENC_STATIC "$root/examples/encode.c" -o "$work/encode_pc_static" "${static_flags[@]}"
"$work/encode_pc_static" >/dev/null
