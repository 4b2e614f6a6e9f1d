#!/usr/bin/env bash
# Times the same `posenc bench` rows for several builds in one session, in
# alternating passes, so that a time-limited machine compares candidates
# (other block sizes, a scheduler change) against a baseline in one run:
#
#   bench/compare_builds.sh OUT NAME=DIR [NAME=DIR ...]
#
# DIR holds bin/posenc and lib/ (a ../shared/tools/pack-build.sh tarball
# unpacked) or is a build tree (tools/posenc/posenc, src/). Each pass runs
# every build once, in the order given; PASSES (2) passes, FILTER the rows
# (default: the many-core targets' rows, bench/target_rows.sh), THREADS the
# OpenMP threads (default: all), ISA the path (default: the best the CPU
# has). Each build's `posenc bench --json` is OUT/NAME-PASS.json;
# OUT/compare.txt has each row's best median per build.
set -euo pipefail
(($# >= 2)) || { sed -n '2,/^set /{/^#/p;}' "$0" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/target_rows.sh
source "$root/bench/target_rows.sh"
out=$1
shift
mkdir -p "$out"
unset OMP_PROC_BIND OMP_PLACES OMP_WAIT_POLICY GOMP_CPU_AFFINITY GOMP_SPINCOUNT KMP_AFFINITY
if [[ -n ${THREADS:-} ]]; then export OMP_NUM_THREADS=$THREADS; else unset OMP_NUM_THREADS; fi

declare -A cli lib
names=()
for build in "$@"; do
  name=${build%%=*}
  dir=${build#*=}
  names+=("$name")
  if [[ -x $dir/bin/posenc ]]; then
    cli[$name]=$dir/bin/posenc lib[$name]=$dir/lib
  else
    cli[$name]=$dir/tools/posenc/posenc lib[$name]=$dir/src
  fi
done
for pass in $(seq 1 "${PASSES:-2}"); do
  for name in "${names[@]}"; do
    LD_LIBRARY_PATH=${lib[$name]}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      "${cli[$name]}" bench --json --isa "${ISA:-auto}" --filter "${FILTER:-$one_thread}" \
      >"$out/$name-$pass.json" || echo "$name, pass $pass: FAILED (status $?)"
  done
done
python3 - "$out" "${names[@]}" <<'EOF' | tee "$out/compare.txt"
import glob, json, sys
out, names = sys.argv[1], sys.argv[2:]
best = {}  # (op shape isa, build): the lowest median ms of its passes
for name in names:
    for path in glob.glob(f"{out}/{name}-*.json"):
        try:
            results = json.load(open(path))["results"]
        except (ValueError, KeyError):
            continue  # a pass that failed
        for r in results:
            key = (f"{r['op']} {r['shape']} {r['isa']}", name)
            best[key] = min(best.get(key, r["median_ms"]), r["median_ms"])
for row in sorted({row for row, _ in best}):
    cells = [f"{name} {best[(row, name)]:.3f}" for name in names if (row, name) in best]
    print(f"{row}: " + ", ".join(cells) + " ms")
EOF
