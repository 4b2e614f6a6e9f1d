#!/usr/bin/env bash
# The measurements the performance targets ask for on a many-core server,
# one stage per command so that each fits a time-limited run:
#
#   bench/targets.sh machine [OUT]  the CPU's topology: how many cores its
#                                   logical CPUs are (whether threads share
#                                   a core's AMX and FMA units); any library
#                                   the programs need and cannot find
#   bench/targets.sh tests  [OUT]   the whole GoogleTest suite on every ISA path
#   bench/targets.sh cases  [OUT]   posenc bench --phases rows at all threads,
#                                   then the server targets' rows again at 1
#                                   thread: each with where its time goes
#   bench/targets.sh sdpa   [OUT]   bench/torch_attention.py, 1 and all threads
#                                   (SDPA_THREADS: others, e.g. "all")
#   bench/targets.sh gemms  [OUT]   posenc_gemm_shapes: oneDNN's GEMM rate at
#                                   the attention's block shapes, all
#                                   threads and 1
#   bench/targets.sh floor  [OUT]   bench/torch_gemms.py, all threads and 1:
#                                   torch's GEMM rate at the same block
#                                   shapes, and the least time the cases'
#                                   GEMMs take at it
#   bench/targets.sh share  [OUT]   bench/gemm_share.py: the GEMMs' share of
#                                   the attention cases, all threads, and
#                                   which oneDNN kernels ran
#   bench/targets.sh models [OUT]   bench/torch_models.py, 2 and all threads
#   bench/targets.sh scaling [OUT]  the plain and 2D attention rows (and the
#                                   rows whose names hold theirs: causal,
#                                   packed-qkv) at a
#                                   quarter and half the logical CPUs, then
#                                   at half with one thread a core
#                                   (OMP_PLACES=cores) and at all pinned:
#                                   where the speed-up stops
#   bench/targets.sh all    [OUT]   machine, sdpa (its all-threads rows
#                                   only), cases, gemms, floor, share,
#                                   scaling, then tests, in one command (for a
#                                   time-limited device session: the figures
#                                   first, the torch comparison among the
#                                   first; on a 16-core Xeon with AMX the
#                                   suite took over 90 s), each stage's
#                                   seconds and exit status in OUT/all.txt,
#                                   each stopped after STAGE_TIMEOUT seconds
#                                   (240; status 124, "cut"); a failing
#                                   stage does not stop the next
#
# Each stage prints its table and writes it to OUT/<stage>.txt (OUT: the
# current directory), row by row as measured (a stage cut short keeps what
# it printed); a failing command is reported and the stage's next commands
# still run. All threads means every logical CPU the process may use
# (OMP_NUM_THREADS and OMP_THREAD_LIMIT from the caller are ignored, as are
# its OpenMP placement and wait settings; the machine stage prints any
# OpenMP or oneDNN variable left, such as a oneDNN ISA cap). It needs only what was
# built: the programs are taken from POSENC_TESTS, POSENC_CLI and
# POSENC_GEMM_SHAPES, the library from POSENC_LIBRARY (defaults: the build
# tree), so a build unpacked on a machine without a compiler runs as it
# is. The torch stages need python3 with torch 2.0 or later and timm.
set -euo pipefail
unset OMP_NUM_THREADS OMP_THREAD_LIMIT  # both change nproc and the runs' threads
# Placement and waiting: the stages set them where they mean to.
unset OMP_PROC_BIND OMP_PLACES OMP_WAIT_POLICY GOMP_CPU_AFFINITY GOMP_SPINCOUNT KMP_AFFINITY

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage=${1:-}
out=${2:-.}
tests=${POSENC_TESTS:-$root/build/tests/posenc_tests}
cli=${POSENC_CLI:-$root/build/tools/posenc/posenc}
gemm_shapes=${POSENC_GEMM_SHAPES:-$root/build/bench/posenc_gemm_shapes}
export POSENC_LIBRARY=${POSENC_LIBRARY:-$root/build/src/libposenc.so}
export PYTHONUNBUFFERED=1

# Runs one command of a stage: a failure is reported and remembered, and the
# stage goes on. A stage's group ends with `finish`, its status.
failed=0
run() {
  "$@" || {
    local status=$?
    echo "FAILED (status $status): $*"
    failed=1
  }
}
finish() { return "$failed"; }

# shellcheck source=bench/target_rows.sh
source "$root/bench/target_rows.sh"

mkdir -p "$out"
case "$stage" in
  machine)
    { if command -v lscpu >/dev/null; then
        lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L[123]|NUMA node\(s\))'
      else
        grep -m1 "model name" /proc/cpuinfo
      fi
      echo "logical CPUs: $(nproc) (the stages' all threads)"
      echo "cores: $(awk -F: '/^physical id/ {p = $2} /^core id/ {print p, $2}' /proc/cpuinfo |
                     sort -u | wc -l)"
      siblings=/sys/devices/system/cpu/cpu0/topology/thread_siblings_list
      echo "cpu0's core runs CPUs: $(cat "$siblings" 2>/dev/null)"
      echo "OpenMP and oneDNN settings left: $(env | grep -E '^(OMP|GOMP|KMP|DNNL|ONEDNN)_' |
                                              tr '\n' ' ')"
      echo "python3: $(python3 -c 'import sys, torch, timm
print(sys.executable, "torch", torch.__version__, "timm", timm.__version__)' 2>&1 | tail -1)"
      for program in "$cli" "$tests" "$gemm_shapes" "$POSENC_LIBRARY"; do
        if [[ ! -e $program ]]; then
          echo "MISSING: $program"
          failed=1
        elif ldd "$program" | grep "not found"; then
          echo "  needed by $program"
          failed=1
        fi
      done
      finish
    } 2>&1 | tee "$out/machine.txt" ;;
  tests)
    "$tests" 2>&1 | tee "$out/tests.txt" ;;  # every test's line: a cut run shows how far
  cases)
    { run "$cli" info
      run "$cli" bench --phases --isa avx512 --filter "$all_threads"
      run env OMP_NUM_THREADS=1 "$cli" bench --phases --isa avx512 --filter "$one_thread"
      finish
    } 2>&1 | tee "$out/cases.txt" ;;
  gemms)
    { run "$gemm_shapes"
      run env OMP_NUM_THREADS=1 "$gemm_shapes"
      finish
    } 2>&1 | tee "$out/gemms.txt" ;;
  sdpa)
    python3 "$root/bench/torch_attention.py" --threads "${SDPA_THREADS:-1,all}" --markdown 2>&1 |
      tee "$out/sdpa.txt" ;;
  floor)
    python3 "$root/bench/torch_gemms.py" --threads all,1 --markdown 2>&1 | tee "$out/floor.txt" ;;
  share)
    python3 "$root/bench/gemm_share.py" 2>&1 | tee "$out/share.txt" ;;
  scaling)
    cpus=$(nproc)
    { for threads in $((cpus / 4)) $((cpus / 2)); do
        ((threads >= 1)) || continue
        run env OMP_NUM_THREADS=$threads "$cli" bench --isa avx512 --filter "$scaling"
      done
      echo "one thread a core (OMP_PLACES=cores OMP_PROC_BIND=spread):"
      run env OMP_NUM_THREADS=$(((cpus + 1) / 2)) OMP_PLACES=cores OMP_PROC_BIND=spread \
        "$cli" bench --isa avx512 --filter "$scaling"
      echo "every logical CPU, pinned (OMP_PLACES=threads OMP_PROC_BIND=close):"
      run env OMP_PLACES=threads OMP_PROC_BIND=close "$cli" bench --isa avx512 --filter "$scaling"
      finish
    } 2>&1 | tee "$out/scaling.txt" ;;
  models)
    python3 "$root/bench/torch_models.py" --threads 2,all --markdown 2>&1 |
      tee "$out/models.txt" ;;
  all)
    status=0
    : >"$out/all.txt"
    for each in machine sdpa cases gemms floor share scaling tests; do
      start=$SECONDS
      stage_status=0
      SDPA_THREADS=all timeout -k 10 "${STAGE_TIMEOUT:-240}" "$0" "$each" "$out" ||
        stage_status=$?
      ((stage_status == 0)) || status=1
      cut=""
      if ((stage_status == 124 || stage_status == 137)); then cut=", cut at STAGE_TIMEOUT"; fi
      echo "$each: $((SECONDS - start)) s, status $stage_status$cut" | tee -a "$out/all.txt"
    done
    exit "$status" ;;
  *)
    sed -n '2,/^set /{/^#/p;}' "$0" >&2
    exit 2 ;;
esac
