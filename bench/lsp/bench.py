#!/usr/bin/env python3
"""Times `weft lsp` on a generated 2,000-line program (bench/check/generate.py), as an editor would
see it: from a didChange to the publishDiagnostics of that version, and from a hover request to its
response. Prints the median and the best of RUNS edits of each kind. Usage: bench.py WEFT [LINES] [RUNS]

  open            didOpen -> publishDiagnostics (parse and check the whole file)
  edit code       didChange of one literal in a definition in the middle -> publishDiagnostics
  edit comment    didChange inside a comment (same tokens: no parse or check) -> publishDiagnostics
  hover           hover on a name in the middle of the file -> response (the analysis is current)
  edit + hover    didChange, then at once a hover: the response, which waits for the analysis
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "lsp"))
from client import Client, position_of  # noqa: E402


def main():
    weft = sys.argv[1]
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    text = subprocess.run([sys.executable, os.path.join(HERE, "..", "check", "generate.py"), str(lines)],
                          check=True, capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(prefix="weft-lsp-bench-"), "generated.weft")
    with open(path, "w") as f:
        f.write(text)
    uri = "file://" + path
    blocks = text.count("-- block ")
    middle = blocks // 2
    client = Client([weft, "lsp"])
    client.initialize()
    timings = {"open": [], "edit code": [], "edit comment": [], "hover": [], "edit + hover": []}

    start = time.perf_counter()
    client.open(uri, text, 1)
    diagnostics = client.diagnostics(uri, version=1)
    timings["open"].append(time.perf_counter() - start)
    if diagnostics:
        sys.exit("bench: the generated program has errors: %r" % diagnostics[:1])

    version = 1
    code_line = "def scale%d (x: 'f[..s, n]) (w: 'f[n]) = x * w + 1.0" % middle
    hover_at = position_of(text, "let g = scale%d h" % middle, 0, len("let g = scale%d " % middle))
    for run in range(runs):
        # A code edit: the literal alternates, so every version differs from the last.
        version += 1
        edited = text.replace(code_line, code_line.replace("1.0", "%d.5" % (run + 1)))
        start = time.perf_counter()
        client.change(uri, edited, version)
        if client.diagnostics(uri, version=version):
            sys.exit("bench: an edit made errors")
        timings["edit code"].append(time.perf_counter() - start)

        start = time.perf_counter()
        result = client.at("textDocument/hover", uri, hover_at)
        timings["hover"].append(time.perf_counter() - start)
        if not result or "h : " not in result["contents"]["value"]:
            sys.exit("bench: unexpected hover %r" % result)

        version += 1
        commented = edited.replace("-- block %d\n" % middle, "-- block %d, edited %d\n" % (middle, run))
        start = time.perf_counter()
        client.change(uri, commented, version)
        client.diagnostics(uri, version=version)
        timings["edit comment"].append(time.perf_counter() - start)

        version += 1
        start = time.perf_counter()
        client.change(uri, commented.replace("1.0", "2.0", 1), version)
        result = client.at("textDocument/hover", uri, hover_at)
        timings["edit + hover"].append(time.perf_counter() - start)
        client.diagnostics(uri, version=version)
    client.stop()
    if os.environ.get("WEFT_LSP_TRACE"):
        sys.stderr.write("".join(client.stderr))

    print("weft lsp on %s: %d lines, %d runs each (ms)" % ("bench/check/generate.py", text.count("\n"), runs))
    print("%-14s %8s %8s" % ("", "median", "best"))
    for name, values in timings.items():
        ms = [v * 1000 for v in values]
        print("%-14s %8.1f %8.1f" % (name, statistics.median(ms), min(ms)))


if __name__ == "__main__":
    main()
