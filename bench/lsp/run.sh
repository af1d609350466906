#!/usr/bin/env bash
# The language server's benchmark (bench/lsp/bench.py) with the release build: latency from an
# edit to its diagnostics, and of a hover, on a generated 2,000-line program. Run from the
# repository root: `make bench-lsp`. The goal (the LSP issue): under 100 ms for an edit's diagnostics.
set -euo pipefail
weft=${WEFT:-build/release/compiler/driver/weft}
python3 bench/lsp/bench.py "$weft" "${LINES:-2000}" "${RUNS:-20}"
