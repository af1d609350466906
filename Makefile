# The README's two commands, and the steps they are made of. Each target installs what it needs.
#   make run    install, build (release), check an example program and run it (weft run)
#   make test   install, build (dev preset: debug + ASan/UBSan, and the fuzz harness), run every test
SHELL := /bin/bash
.DEFAULT_GOAL := run

# Debian 12 packages weft builds with (see docs/architecture.md).
PACKAGES := cmake ninja-build pkg-config python3 g++ llvm-19-dev llvm-19-tools libzstd-dev libz3-dev \
            libboost-dev catch2 libedit-dev clang-19 libclang-rt-19-dev clang-format lld \
            python3-numpy python3-pytest nlohmann-json3-dev
EXAMPLE  ?= examples/softmax.weft
FUZZ_SECONDS ?= 60
# The kernel fuzzer's inputs are whole kernels (the stdlib's attention is 5 KB), and one input runs
# synthesis, LLVM and the simulator twice under the sanitizers: more bytes and time an input.
KERNEL_FUZZ := FUZZ_MAX_LEN=8192 FUZZ_TIMEOUT=120

.PHONY: editors-deps editors-npm editors-test editor-screenshot vsix deps configure-dev build-dev build-release build-fuzz run test unit fuzz bench-check bench-interp bench-lsp bench-synth format format-check clean

deps:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing" $$missing; \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	else echo "make deps: all packages present"; fi

build-dev: deps
	cmake --preset dev >/dev/null
	cmake --build --preset dev

build-release: deps
	cmake --preset release >/dev/null
	cmake --build --preset release

build-fuzz: deps
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz

# Check the example (each definition's type), then run its `def main` on the interpreter.
run: build-release
	./build/release/compiler/driver/weft check $(EXAMPLE)
	./build/release/compiler/driver/weft run $(EXAMPLE)

# Check the formatting, build the dev preset and the fuzz harnesses, run unit + lit tests under the
# sanitizers (the kernel fuzzer's corpus replayed among them), prove that run-fuzzer fails on a
# finding, then fuzz the parser and the checker for $(FUZZ_SECONDS) seconds each (`make fuzz` runs
# every harness, the kernel fuzzer too). Prints the build and test times at the end.
test:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory format-check build-dev build-fuzz || exit 1; \
	built=$$(date +%s); \
	ctest --preset dev -j2 || exit 1; \
	$(MAKE) --no-print-directory editors-test || exit 1; \
	tests/fuzz/run-fuzzer-test || exit 1; \
	tools/run-fuzzer build/fuzz/tests/fuzz/parser_fuzzer tests/fuzz/corpus/parser $(FUZZ_SECONDS) || exit 1; \
	tools/run-fuzzer build/fuzz/tests/fuzz/check_fuzzer tests/fuzz/corpus/check $(FUZZ_SECONDS) || exit 1; \
	done=$$(date +%s); \
	echo "make test: build $$((built - start)) s, tests $$((done - built)) s"

# Editor support (editors/, docs/editors.md): Vim and Emacs for their tests, Vim's ALE and tmux for
# the end-to-end test (tests/editors/e2e_vim_ale.sh), Pillow and the DejaVu fonts for its screenshot
# (tools/editor-screenshot), and Node.js with npm for the VS Code extension. A Node.js already on
# PATH is kept (NodeSource's bundles npm, and Debian's npm would conflict with it); Debian's nodejs
# and npm are installed only where absent.
EDITOR_PACKAGES := vim emacs-nox vim-ale tmux python3-pil fonts-dejavu-core

editors-deps:
	@missing=$$(for p in $(EDITOR_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "make editors-deps: installing" $$missing; \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi; \
	for tool in node npm vim emacs tmux; do \
	  command -v $$tool >/dev/null || { echo "make editors-deps: $$tool is missing and could not be installed; the editor tests need it" >&2; exit 1; }; \
	done

# The VS Code extension's npm packages, exactly as package-lock.json pins them (needs the npm registry;
# no install scripts: none of the packages needs one here).
editors-npm: editors-deps
	cd editors/vscode && npm ci --no-audit --no-fund --ignore-scripts

# Package the VS Code extension: build/editors/weft.vsix (code --install-extension build/editors/weft.vsix).
vsix: editors-npm
	mkdir -p build/editors
	cd editors/vscode && node_modules/.bin/vsce package --skip-license --allow-missing-repository -o ../../build/editors/weft.vsix

# The grammar, client and packaging tests of editors/vscode, the Vim and Emacs tests, and Vim with ALE
# against `weft lsp` in tmux (it takes weft from $$WEFT, else build/dev, else build/release).
editors-test: vsix
	VSIX=$(CURDIR)/build/editors/weft.vsix editors/test.sh

# Regenerate docs/images/vim-ale-lsp.png, the screenshot of the end-to-end test (docs/editors.md).
editor-screenshot: editors-deps build-release
	WEFT=$(CURDIR)/build/release/compiler/driver/weft tools/editor-screenshot

fuzz: build-fuzz
	cmake --build build/fuzz --target kernel_fuzzer
	tests/fuzz/run-fuzzer-test
	tools/run-fuzzer build/fuzz/tests/fuzz/parser_fuzzer tests/fuzz/corpus/parser $(FUZZ_SECONDS)
	tools/run-fuzzer build/fuzz/tests/fuzz/check_fuzzer tests/fuzz/corpus/check $(FUZZ_SECONDS)
	$(KERNEL_FUZZ) tools/run-fuzzer build/fuzz/tests/fuzz/kernel_fuzzer tests/fuzz/corpus/kernel $(FUZZ_SECONDS)

# Generated-program fuzzing (docs/testing.md): the soundness oracle on N programs from seed SEED
# (release build; each finding's program in /tmp/findings), and the differential fuzzer's half
# here (N programs built into build/fuzz-programs, packed into .fuzz-carry for one device call).
N ?= 2000
SEED ?= 1
.PHONY: fuzz-programs fuzz-programs-gpu
fuzz-programs: build-release
	tools/fuzz-programs/soundness --weft build/release/compiler/driver/weft --from $(SEED) --count $(N)

fuzz-programs-gpu: build-release
	tools/fuzz-programs/differential build/fuzz-programs --weft build/release/compiler/driver/weft --from $(SEED) --count $(N) --jobs 2
	tools/fuzz-programs/pack build/fuzz-programs .fuzz-carry

# The checker's speed on the stdlib, the examples and a generated 5,000-line program (release build).
bench-check: build-release
	bench/check/run.sh

bench-interp: build-release
	bench/interp/run.sh

# Layout synthesis's time per kernel and target (gemm, attention; release build; goal < 1 s).
bench-synth: build-release
	bench/synth/run.sh

# The language server's latency: an edit to its diagnostics, a hover (generated 2,000-line program).
bench-lsp: build-release
	bench/lsp/run.sh

format:
	git ls-files '*.h' '*.cpp' | xargs clang-format -i

format-check: deps
	git ls-files '*.h' '*.cpp' | xargs clang-format --dry-run --Werror && echo 'format-check: all files formatted'

clean:
	rm -rf build
