#!/usr/bin/env bash
# The editor support's tests; `make editors-test` runs them after `npm ci` and `make vsix`.
#   - VS Code: the grammar tests (editors/vscode/tests/*.weft, vscode-tmgrammar-test), then the node
#     tests (scope coverage, examples/ and stdlib/ free of invalid tokens, snippets, the client's
#     wiring of `weft lsp`, the packaged .vsix at $VSIX);
#   - Vim: editors/vim/test/run.vim in `vim -es`;
#   - Emacs: editors/emacs/test/weft-mode-test.el in `emacs --batch`;
#   - end to end: tests/editors/e2e_vim_ale.sh, Vim with ALE in tmux against `weft lsp` (a shape
#     error's diagnostic and hovers on the screen); skipped only where vim or tmux is missing.
# Every part runs; the script fails if any did. A part that exits 77 is reported as skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
export VSIX="${VSIX:-$PWD/build/editors/weft.vsix}"

failed=()
skipped=()
run() {
  local name=$1
  shift
  local start=$SECONDS
  echo "== editors-test: $name"
  "$@"
  local status=$?
  if [ $status -eq 0 ]; then
    echo "== editors-test: $name passed ($((SECONDS - start)) s)"
  elif [ $status -eq 77 ]; then
    echo "== editors-test: $name SKIPPED" >&2
    skipped+=("$name")
  else
    echo "== editors-test: $name FAILED ($((SECONDS - start)) s)" >&2
    failed+=("$name")
  fi
}

need() {
  command -v "$1" >/dev/null || { echo "editors-test: $1 is not installed (make editors-deps installs it)" >&2; exit 1; }
}
need node
need vim
need emacs
[ -x editors/vscode/node_modules/.bin/vscode-tmgrammar-test ] ||
  { echo "editors-test: run 'npm ci' in editors/vscode first (make editors-test does)" >&2; exit 1; }

run "vscode grammar" bash -c 'cd editors/vscode && node_modules/.bin/vscode-tmgrammar-test --compact "tests/*.weft"'
run "vscode node tests" bash -c 'cd editors/vscode && node --test tests/*.test.js'
run "vim" vim -Nu NONE -i NONE -es -S editors/vim/test/run.vim
run "emacs" emacs --batch -Q -l editors/emacs/test/weft-mode-test.el -f ert-run-tests-batch-and-exit
run "vim + ALE + weft lsp, end to end in tmux" tests/editors/e2e_vim_ale.sh

if [ ${#failed[@]} -gt 0 ]; then
  echo "editors-test: failed: ${failed[*]}" >&2
  exit 1
fi
if [ ${#skipped[@]} -gt 0 ]; then
  echo "editors-test: passed, but skipped: ${skipped[*]}"
else
  echo "editors-test: all passed"
fi
