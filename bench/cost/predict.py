#!/usr/bin/env python3
"""The cost model's predicted time beside the measured one, for the benchmarked kernels (issue 9):

  predict.py MEASURED.md... [--weft PATH] [--machine h100|h200] [--out FILE]

For every sm_90a case of bench/gemm/cases.txt (gemm_bf16 at 2048 to 8192) and of
bench/attention/cases.txt (the stdlib kernels), runs `weft explain FILE --kernel K --target sm_90a
--no-timings --machine M --size ... --scalar ...` and reads the `predicted time at ...: X ms` line
(docs/scheduling.md, "Cost model"). The measured times come from tables in the format
bench/gemm/bench.py prints and writes to $OUT/bench.md (`| case | weft ms | ... |`, the case named
KERNEL-TARGET-SIZES[-SCALAR_VALUE] as tests/gpu/gpu_cases names it); when several files give a case,
the last one wins. Prints one markdown table (predicted, measured, predicted / measured) and the
count of cases within 25%; exit status 1 when a case is outside 25% or has no measurement. The
machine is h100 by default (bench/cost/measured-2026-11-26-h100.md: the lowering codegen emits now);
the H200 table of 2026-11-26 is of the attention lowering before staged products and ping-pong.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = [os.path.join(ROOT, "bench/gemm/cases.txt"), os.path.join(ROOT, "bench/attention/cases.txt")]
GEMM_SIZES = {2048, 4096, 8192}


def cases():
    """(name, file, kernel, sizes/scalars as NAME=VALUE) of the sm_90a cases predict.py covers."""
    out = []
    for path in CASES:
        for line in open(path):
            line = line.split("#")[0].strip()
            if not line:
                continue
            words = line.split()
            file, kernel, targets = words[0], words[1], words[2].split(",")
            if "sm_90a" not in targets or not file.startswith("stdlib/"):
                continue
            assignments = [w for w in words[3:] if "=" in w and not w.startswith("--")]
            if kernel.startswith("gemm") and int(dict(a.split("=") for a in assignments)["m"]) not in GEMM_SIZES:
                continue
            out.append((file, kernel, assignments))
    return out


def measured(paths):
    times = {}
    for path in paths:
        for line in open(path):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and re.fullmatch(r"[0-9.]+", cells[1]):
                times[cells[0]] = float(cells[1])
    return times


def predict(weft, machine, file, kernel, sizes, scalars):
    command = [weft, "explain", os.path.join(ROOT, file), "--kernel", kernel, "--target", "sm_90a", "--no-timings",
               "--machine", machine]
    for s in sizes:
        command += ["--size", s]
    for s in scalars:
        command += ["--scalar", s]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"predict.py: {' '.join(command)} failed:\n{run.stderr}")
    hit = re.search(r"^  predicted time at .*?: ([0-9.]+) ms", run.stdout, re.M)
    if not hit:
        sys.exit(f"predict.py: no predicted time in the output of {' '.join(command)}")
    return float(hit.group(1))


def main():
    args = sys.argv[1:]
    weft = os.path.join(ROOT, "build/dev/compiler/driver/weft")
    machine, out = "h100", None
    for flag in ("--weft", "--machine", "--out"):
        if flag in args:
            i = args.index(flag)
            value = args[i + 1]
            del args[i:i + 2]
            if flag == "--weft":
                weft = value
            elif flag == "--machine":
                machine = value
            else:
                out = value
    if not args:
        sys.exit(__doc__)
    times = measured(args)
    rows, within, missing = [], 0, 0
    for file, kernel, assignments in cases():
        # Sizes are the names the kernel's types use; the rest (causal) are scalars, as in gpu_cases.
        sizes = [a for a in assignments if a.split("=")[0] in ("m", "n", "k", "bh", "s", "t")]
        scalars = [a for a in assignments if a not in sizes]
        name = f"{kernel}-sm_90a-" + "x".join(a.split("=")[1] for a in sizes)
        name += "".join(f"-{a.split('=')[0]}_{a.split('=')[1]}" for a in scalars)
        ms = predict(weft, machine, file, kernel, sizes, scalars)
        m = times.get(name)
        if m is None:
            missing += 1
            rows.append(f"| {name} | {ms:.3f} | - | - |")
            continue
        ratio = ms / m
        ok = abs(ratio - 1) <= 0.25
        within += ok
        rows.append(f"| {name} | {ms:.3f} | {m:.3f} | {ratio:.2f}{'' if ok else ' (outside 25%)'} |")
    table = ["| case | predicted ms | measured ms | predicted / measured |", "|---|---|---|---|"] + rows
    total = len(rows)
    text = "\n".join(table) + f"\n\n{within} of {total} cases within 25% ({machine}, {os.path.basename(weft)})"
    if missing:
        text += f"; {missing} without a measurement"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    return 0 if within == total else 1


if __name__ == "__main__":
    sys.exit(main())
