#!/usr/bin/env bash
# Builds posenc and runs every test, each stage's as $(nproc) processes at
# once (ctest -j, or a GoogleTest program in shards):
#   1. native build: the GoogleTest suite on every ISA path the CPU has; on
#      a CPU with AVX-512 the whole suite again under POSENC_MAX_ISA=avx2
#      (AVX-512 tests skip; ctest's cap.* processes check oneDNN's cap); on a
#      CPU with AVX512-BF16 the AVX-512 path again as a CPU without it runs it
#      (plain kernel table, bf16 widened to fp32 GEMMs); the cases'
#      thread-count comparison with a default of 4 OpenMP threads, `posenc
#      check`, then an install into a temporary prefix with the examples
#      built against it; the Python package's tests (pytest, Debian's
#      python3) on that build, and its install command into a temporary
#      virtual environment;
#   2. the suite, and the posenc program's tests, under AddressSanitizer and
#      UndefinedBehaviorSanitizer (with float-cast-overflow, which GCC's
#      "undefined" leaves out);
#   3. the suite under ThreadSanitizer with 2-thread OpenMP regions (clang,
#      LLVM's libomp and its Archer tool);
#   4. libFuzzer over the C ABI, the library instrumented for coverage;
#   5. the library built by clang (LLVM's libomp), installed, and the
#      examples built against it by GCC;
#   6. on x86-64, a cross build for aarch64 whose suite runs on the NEON path
#      under qemu-user (needs `install-deps.sh --test`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)

# Names a stage, with the seconds the script has run so far.
stage() { echo "== $* (at ${SECONDS} s)"; }

# Runs a GoogleTest program as $jobs shards at once (one process each, the
# caller's variables in their environment), then prints each shard's output;
# fails if a shard fails.
sharded() {
  local out status=0 pids=() i
  out=$(mktemp -d)
  for ((i = 0; i < jobs; ++i)); do
    GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$i "$@" --gtest_brief=1 >"$out/$i" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
    cat "$out/$i"
  done
  rm -rf "$out"
  return $status
}

stage "native build and tests"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$jobs"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"
# (Without AVX-512 the cap changes nothing, for posenc or oneDNN.)
if grep -qw avx512f /proc/cpuinfo; then
  stage "the suite again, capped with POSENC_MAX_ISA=avx2"
  POSENC_MAX_ISA=avx2 sharded "$root/build/tests/posenc_tests"
fi
stage "the AVX-512 path again, as a CPU without AVX512-BF16 runs it (skipped without one)"
POSENC_TEST_WITHOUT_AVX512_BF16=1 sharded "$root/build/tests/posenc_tests" \
  --gtest_filter='-*/avx2:*/baseline'
stage "the suite with bf16 GEMMs where oneDNN has them (skipped where they run by default)"
POSENC_TEST_BF16_GEMMS=1 sharded "$root/build/tests/posenc_tests" \
  --gtest_filter='-*/avx2:*/baseline'
stage "every case's bits across thread counts, with more OpenMP threads than cores"
OMP_NUM_THREADS=4 sharded "$root/build/tests/posenc_tests" --gtest_filter='Every/Cases.*'
"$root/build/tools/posenc/posenc" check
"$root/scripts/check-install.sh" "$root/build"
stage "the Python package: tests, then pip install ./python"
POSENC_LIBRARY="$root/build/src/libposenc.so" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  "$root/python/tests"
venv=$(mktemp -d)
/usr/bin/python3 -m venv --system-site-packages "$venv"
(cd "$root" && "$venv/bin/pip" install -q --root-user-action=ignore --no-build-isolation ./python)
(cd "$venv" && bin/python -c 'import posenc, sys; sys.exit(not posenc.library_path.startswith(sys.prefix))')
rm -rf "$venv"

stage "AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOSENC_SANITIZE=address,undefined,float-cast-overflow -DPOSENC_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$root/build-asan" -j "$jobs"
ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs"

stage "ThreadSanitizer with Archer: application threads and 2-thread OpenMP regions"
# clang links LLVM's libomp, which also serves oneDNN's GOMP_* calls (one
# runtime in the process); its Archer tool tells TSan about the regions'
# fork, barriers and join. The uninstrumented runtimes and oneDNN are ignored.
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOSENC_SANITIZE=thread -DPOSENC_BUILD_BENCHMARKS=OFF -DPOSENC_BUILD_TOOLS=OFF >/dev/null
cmake --build "$root/build-tsan" -j "$jobs" --target posenc_tests
# Archer ships beside the libomp the build linked.
libomp=$(sed -n 's/^OpenMP_omp_LIBRARY:FILEPATH=//p' "$root/build-tsan/CMakeCache.txt")
archer=$(dirname "$libomp")/libarcher.so
[[ -f $archer ]] || { echo "no $archer (Debian: libomp-14-dev)" >&2; exit 1; }
OMP_NUM_THREADS=2 OMP_TOOL_LIBRARIES="$archer" TSAN_OPTIONS=ignore_noninstrumented_modules=1 \
  POSENC_CONCURRENCY_SECONDS=1 sharded "$root/build-tsan/tests/posenc_tests"

stage "fuzzing the C ABI for ${POSENC_FUZZ_SECONDS:-60} s"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOSENC_SANITIZE=address,undefined -DPOSENC_BUILD_FUZZERS=ON \
  -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_BENCHMARKS=OFF -DPOSENC_BUILD_TOOLS=OFF >/dev/null
cmake --build "$root/build-fuzz" -j "$jobs"
corpus="$root/build-fuzz/corpus"
mkdir -p "$corpus"
# Huge but valid sizes must fail with POSENC_ERROR_OUT_OF_MEMORY, not abort.
ASAN_OPTIONS=allocator_may_return_null=1 "$root/build-fuzz/tests/fuzz/posenc_api_fuzzer" \
  -max_total_time="${POSENC_FUZZ_SECONDS:-60}" -print_final_stats=1 \
  -artifact_prefix="$root/build-fuzz/" "$corpus" "$root/tests/fuzz/corpus"

stage "the library built by clang, installed, the examples built by GCC"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-clang" -DCMAKE_BUILD_TYPE=Release \
  -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_BENCHMARKS=OFF -DPOSENC_BUILD_TOOLS=OFF >/dev/null
cmake --build "$root/build-clang" -j "$jobs"
"$root/scripts/check-install.sh" "$root/build-clang"

if [[ $(uname -m) == x86_64 ]]; then
  stage "aarch64 (NEON) build, tests under qemu"
  sysroot="$root/build-arm64/sysroot"
  "$root/scripts/make-arm64-sysroot.sh" "$sysroot"
  cmake -S "$root" -B "$root/build-arm64" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
    -DPOSENC_ARM64_SYSROOT="$sysroot" \
    -DPOSENC_BUILD_BENCHMARKS=OFF -DPOSENC_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$root/build-arm64" -j "$jobs"
  ctest --test-dir "$root/build-arm64" --output-on-failure -j "$jobs"
fi
stage "done"
