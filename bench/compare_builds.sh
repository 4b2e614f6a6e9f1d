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
# (default: the many-core targets' rows, bench/targets.sh's), THREADS the
# OpenMP threads (default: all), ISA the path (default: the best the CPU
# has). Each build's output is OUT/NAME-PASS.txt;
# OUT/compare.txt has each row's best median per build.
set -euo pipefail
(($# >= 2)) || { sed -n '2,/^set /{/^#/p;}' "$0" >&2; exit 2; }
out=$1
shift
mkdir -p "$out"
targets="attention_bf16 plain B1 H32 T2048 d128,attention_f32 plain B1 H32 T2048 d128"
targets+=",2D B1 H4 64x64 d64,H12 64x64,C512 14x14"
filter=${FILTER:-$targets}
unset OMP_PROC_BIND OMP_PLACES OMP_WAIT_POLICY GOMP_CPU_AFFINITY GOMP_SPINCOUNT KMP_AFFINITY
if [[ -n ${THREADS:-} ]]; then export OMP_NUM_THREADS=$THREADS; else unset OMP_NUM_THREADS; fi

names=()
for build in "$@"; do
  name=${build%%=*}
  dir=${build#*=}
  names+=("$name")
  if [[ -x $dir/bin/posenc ]]; then
    printf -v "cli_$name" %s "$dir/bin/posenc"
    printf -v "lib_$name" %s "$dir/lib"
  else
    printf -v "cli_$name" %s "$dir/tools/posenc/posenc"
    printf -v "lib_$name" %s "$dir/src"
  fi
done
for pass in $(seq 1 "${PASSES:-2}"); do
  for name in "${names[@]}"; do
    cli_var=cli_$name lib_var=lib_$name
    LD_LIBRARY_PATH=${!lib_var}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      "${!cli_var}" bench --isa "${ISA:-auto}" --filter "$filter" >"$out/$name-$pass.txt" 2>&1 ||
      echo "$name, pass $pass: FAILED (status $?)"
  done
done
# A row: op, shape (up to the ISA column), its median ms. The best per build.
for name in "${names[@]}"; do
  cat "$out/$name"-*.txt | awk -v build="$name" '
    $0 ~ / (avx512|avx2|baseline|neon) +[0-9.]+ / {
      for (i = 1; i <= NF; ++i) if ($i ~ /^(avx512|avx2|baseline|neon)$/) break
      row = $1; for (j = 2; j < i; ++j) row = row " " $j
      ms = $(i + 1)
      if (!(row in best) || ms + 0 < best[row] + 0) best[row] = ms
    }
    END { for (row in best) print row "\t" build "\t" best[row] }'
done | sort -s -t$'\t' -k1,1 | tee "$out/compare.txt"
