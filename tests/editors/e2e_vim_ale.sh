#!/usr/bin/env bash
# End to end in a real editor: Vim with Debian's vim-ale, driven headless in tmux, against `weft lsp`.
# Opens tests/editors/shape_error.weft with editors/vim on the runtime path (so ALE uses the linter
# editors/vim/ale_linters/weft/weft.vim ships) and checks what the screen shows:
#   1. the shape error's diagnostic (E0206, "inner dimensions `4` and `5` differ") on its line;
#   2. :ALEHover on the `let` binder `h` shows its inferred type, `h : f32[n, 8]`;
#   3. :ALEHover on the operand `y` of the failing `x @ y` shows `y : f32[5, m]`.
# Every wait is bounded (E2E_TIMEOUT seconds each, default 30); on a failure it prints what the
# screen showed and the server's log. Exit status: 0 passed, 1 failed, 77 skipped (no vim or tmux).
#
#   tests/editors/e2e_vim_ale.sh              # weft from $WEFT, else build/dev, else build/release
#   E2E_SCREEN=out.ans tests/editors/e2e_vim_ale.sh   # also keep the last screen, with colours
#                                                     # (tools/editor-screenshot renders it to PNG)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
timeout_s=${E2E_TIMEOUT:-30}
width=${E2E_WIDTH:-140}
height=${E2E_HEIGHT:-16}

skip() {
  echo "e2e-vim-ale: skipped: $*" >&2
  exit 77
}
fail() {
  echo "e2e-vim-ale: FAILED: $*" >&2
  if [ -n "${tmp:-}" ]; then
    if [ -S "$tmp/tmux.sock" ]; then
      echo "--- the screen:" >&2
      tmux -S "$tmp/tmux.sock" capture-pane -p -t e2e >&2 2>/dev/null
    fi
    if [ -s "$tmp/lsp.log" ]; then
      echo "--- weft lsp's standard error:" >&2
      tail -n 40 "$tmp/lsp.log" >&2
    fi
  fi
  exit 1
}

command -v vim >/dev/null || skip "vim is not installed (make editors-deps installs it)"
command -v tmux >/dev/null || skip "tmux is not installed (make editors-deps installs it)"

weft=${WEFT:-}
if [ -z "$weft" ]; then
  for candidate in "$root/build/dev/compiler/driver/weft" "$root/build/release/compiler/driver/weft"; do
    if [ -x "$candidate" ]; then
      weft=$candidate
      break
    fi
  done
fi
[ -n "$weft" ] && [ -x "$weft" ] ||
  fail "no weft executable: build one (make build-dev or make build-release) or set WEFT=path"
weft=$(readlink -f "$weft")
timeout 20 "$weft" --version >/dev/null || fail "$weft --version did not run"

# ALE, as Debian's vim-ale installs it (an optional package), or already on Vim's runtime path.
timeout 20 vim -Nu NONE -i NONE -es \
  -c 'silent! packadd ale' -c 'if exists("g:loaded_ale") | qall! | else | cquit | endif' </dev/null >/dev/null 2>&1 ||
  fail "Vim does not find ALE: install Debian's vim-ale (make editors-deps does)"

tmp=$(mktemp -d /tmp/ed-e2e.XXXXXX) || fail "mktemp"
cleanup() {
  tmux -S "$tmp/tmux.sock" kill-server 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cp "$root/tests/editors/shape_error.weft" "$tmp/shape_error.weft"
# The server as ALE starts it, with its standard error kept for a failure's report.
cat >"$tmp/weft" <<EOF
#!/bin/sh
WEFT_LSP_TRACE=1 exec '$weft' "\$@" 2>>'$tmp/lsp.log'
EOF
chmod +x "$tmp/weft"
# A user's vimrc: editors/vim on the runtime path, ALE, and where weft is.
cat >"$tmp/vimrc" <<EOF
set nocompatible encoding=utf-8
set runtimepath^=$root/editors/vim
packadd ale
filetype plugin indent on
syntax on
set number signcolumn=yes laststatus=2 noswapfile noruler shortmess+=I background=light
let g:ale_floating_window_border = ["│", "─", "╭", "╮", "╯", "╰", "│", "─"]
let g:ale_weft_lsp_executable = '$tmp/weft'
let g:ale_floating_preview = 1
EOF

sock=$tmp/tmux.sock
export LANG=C.UTF-8
unset TMUX
timeout 20 tmux -S "$sock" -f /dev/null new-session -d -s e2e -x "$width" -y "$height" \
  "cd '$tmp' && TERM=tmux-256color vim -Nu '$tmp/vimrc' -i NONE shape_error.weft" ||
  fail "tmux did not start"
timeout 5 tmux -S "$sock" set-option -t e2e status off >/dev/null

screen() { timeout 5 tmux -S "$sock" capture-pane -p -t e2e; }
keys() { timeout 5 tmux -S "$sock" send-keys -t e2e "$@"; }
# Waits until the screen has a line matching the extended regular expression $1.
wait_for() {
  local deadline=$((SECONDS + timeout_s))
  while [ $SECONDS -lt $deadline ]; do
    if screen | grep -Eq -- "$1"; then
      return 0
    fi
    timeout 5 tmux -S "$sock" has-session -t e2e 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

# 1. The diagnostic, on the line of `def bad` (ALE's virtual text), and its sign.
wait_for '^>> +8 def bad .*inner dimensions `4` and `5` differ' ||
  fail "no diagnostic 'inner dimensions \`4\` and \`5\` differ' on line 8 within $timeout_s s"
echo "e2e-vim-ale: the shape error's diagnostic is on line 8"

# 2. A hover on `h` in `let h = x @ w in`: its inferred type.
keys ':call cursor(5, 7)' Enter ':ALEHover' Enter
wait_for 'h : f32\[n, 8\]' || fail "no hover 'h : f32[n, 8]' on \`h\` (line 5) within $timeout_s s"
echo "e2e-vim-ale: the hover on h shows h : f32[n, 8]"

# 3. A hover on the right operand of the failing `x @ y`.
keys Escape ':call cursor(8, 45)' Enter ':ALEHover' Enter
wait_for 'y : f32\[5, m\]' || fail "no hover 'y : f32[5, m]' on \`y\` (line 8) within $timeout_s s"
echo "e2e-vim-ale: the hover on y shows y : f32[5, m]"

if [ -n "${E2E_SCREEN:-}" ]; then
  sleep 0.5 # let ALE finish drawing
  timeout 5 tmux -S "$sock" capture-pane -e -N -p -t e2e >"$E2E_SCREEN" || fail "capture-pane -e"
  echo "e2e-vim-ale: the screen is in $E2E_SCREEN ($width x $height)"
fi
keys Escape ':qall!' Enter
echo "e2e-vim-ale: passed"
