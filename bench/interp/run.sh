#!/usr/bin/env bash
# The interpreter's benchmark: `weft run` of bench/interp/matmul.weft with the release build, best
# of 5 of the milliseconds `time` reports for a 512x512x512 f32 `@` (the goal: under 1000 ms).
# Run from the repository root: `make bench-interp`.
set -euo pipefail
weft=${WEFT:-build/release/compiler/driver/weft}
best=
for _ in 1 2 3 4 5; do
  ms=$("$weft" run bench/interp/matmul.weft | tail -1)
  if [[ -z $best ]] || awk "BEGIN { exit !($ms < $best) }"; then best=$ms; fi
done
printf '512x512x512 f32 @ on the interpreter: best of 5 %s ms\n' "$best"
