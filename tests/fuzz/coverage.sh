#!/usr/bin/env bash
# What a corpus covers inside posenc: runs the fuzzer once over it
# (-print_coverage=1) and prints the edges and functions covered in src/, then
# any public function (include/posenc/*.h) the corpus never calls.
#   tests/fuzz/coverage.sh build-fuzz/tests/fuzz/posenc_api_fuzzer CORPUS_DIR...
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fuzzer=$1
shift
report=$(ASAN_OPTIONS=allocator_may_return_null=1 "$fuzzer" -runs=0 -print_coverage=1 "$@" 2>&1)
# Lines: "COVERED_FUNC: hits: H edges: E/T NAME FILE:LINE" (or UNCOVERED_FUNC).
grep -E '^(UN)?COVERED_FUNC' <<<"$report" | grep "$root/src/" |
  awk '{ split($5, e, "/"); covered += e[1]; total += e[2]; functions++
         if ($1 == "COVERED_FUNC:") hit++ }
       END { printf "inside posenc (src/): %d of %d edges, %d of %d functions\n",
                    covered, total, hit, functions }'
called=$(grep -E '^COVERED_FUNC' <<<"$report" | grep -oE ' posenc_[a-z0-9_]+ ' | tr -d ' ' | sort -u)
public=$(grep -ohE 'posenc_[a-z0-9_]+\(' "$root"/include/posenc/*.h | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$public") <(echo "$called"))
echo "public functions: $(wc -l <<<"$public"), never called: ${missing:-none}"
