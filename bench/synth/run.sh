#!/usr/bin/env bash
# Layout synthesis's benchmark: synthesizes the stdlib kernels and the explain tests' gemm and
# attention for sm_80 and sm_90a with the release build and prints the time synthesis reports
# (`weft explain`'s `time:` line: the search alone, without checking and lowering), best of 5, and
# the candidates it costed. Run from the repository root: `make bench-synth` (WEFT=path picks another
# build of weft). The goal (issue 6): under 1 s a kernel.
set -euo pipefail
weft=${WEFT:-build/release/compiler/driver/weft}
printf '%-16s %-7s %11s %10s\n' kernel target candidates "best ms"
while read -r file kernel; do
  for target in sm_80 sm_90a; do
    best=999999 candidates=0
    for _ in 1 2 3 4 5; do
      out=$("$weft" explain "$file" --kernel "$kernel" --target "$target")
      ms=$(sed -n 's/^  time: \([0-9.]*\) ms$/\1/p' <<< "$out")
      candidates=$(sed -n 's/^  choice: .* over \([0-9]*\) candidates.*/\1/p' <<< "$out")
      best=$(python3 -c "print(min($best, $ms))")
    done
    printf '%-16s %-7s %11s %10.3f\n' "$kernel" "$target" "$candidates" "$best"
  done
done <<'KERNELS'
tests/lit/explain/gemm_sm80.weft gemm
tests/lit/explain/attention_sm80.weft attention
stdlib/gemm.weft gemm_bf16
stdlib/gemm.weft gemm_bf16_nt
stdlib/attention.weft attention_d64
stdlib/attention.weft attention_d128
KERNELS
