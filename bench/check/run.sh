#!/usr/bin/env bash
# The checker's benchmark: type checks the stdlib, the examples and a generated 5,000-line program
# with the release build, and prints the wall time of each (best of 5). Run from the repository
# root: `make bench-check`. The goal (issue 3): under 200 ms for the generated program.
set -euo pipefail
weft=${WEFT:-build/release/compiler/driver/weft}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 bench/check/generate.py 5000 > "$work/generated.weft"
best() {  # best wall time in ms of 5 runs of `weft check FILE`
  local file=$1 best=999999
  for _ in 1 2 3 4 5; do
    local start end
    start=$(date +%s%N)
    # shape_error.weft fails on purpose (exit 1); any other failure, or a crash, stops the bench.
    local rc=0
    "$weft" check "$file" > /dev/null 2>&1 || rc=$?
    if (( rc != 0 )) && [[ $file != examples/shape_error.weft || $rc != 1 ]]; then
      echo "bench-check: weft check $file failed (exit $rc)" >&2
      exit 1
    fi
    end=$(date +%s%N)
    local ms=$(( (end - start) / 1000000 ))
    (( ms < best )) && best=$ms
  done
  echo "$best"
}
printf '%-36s %8s %10s\n' file lines "best ms"
for file in stdlib/nn.weft examples/*.weft "$work/generated.weft"; do
  name=$file
  [[ $file == "$work/generated.weft" ]] && name="generated (bench/check/generate.py)"
  ms=$(best "$file")  # a failed check stops the bench here (set -e)
  printf '%-36s %8d %10d\n' "$name" "$(wc -l < "$file")" "$ms"
done
