"""What the bench scripts that call weft through the Python package beside PyTorch share
(bench/models/bench.py and views.py, bench/gemm/package.py): a PASS/FAIL line per check, the
relative error against a reference, triton's do_bench median, and the end of a run (the report
written to $OUT/NAME when OUT is set, the failed checks named, the exit status). A script imports it
with the bench folder on its path."""

import os

from triton.testing import do_bench

BOUND = 2e-2  # bf16 operands: between 1e-3 and 1e-2 against an f32 reference

failures = []


def check(name, ok, detail):
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    if not ok:
        failures.append(name)


def rel(out, ref):
    """‖out − ref‖ / ‖ref‖ in f64 (NaN where out has one)."""
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm())


def bench(fn):
    """Milliseconds, the median of do_bench's calls (warm-up 50 ms, 300 ms of calls, L2 flushed)."""
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def write_report(text, name):
    """`text` into $OUT/`name` when OUT is set."""
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], name), "w") as f:
            f.write(text + "\n")


def finish(text, name):
    """The end of a run whose report `text` is printed: written to $OUT/`name`, the failed checks
    named; the exit status (1 when a check failed)."""
    write_report(text, name)
    if failures:
        print("failed: %s" % ", ".join(failures), flush=True)
    return 1 if failures else 0
