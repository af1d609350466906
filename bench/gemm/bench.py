#!/usr/bin/env python3
"""weft's generated kernels beside the anchors of ../shared/bench/anchors.py, in one run on one GPU
(bench/gemm/README.md, bench/attention/README.md):

  bench.py DIR [--time N]

DIR holds gpu_check and bench-cases/ (tests/gpu/prepare-carry --bench). gpu_check --time N times
every case, one process each (events, median, the L2 flushed before each launch as do_bench does;
inputs made with `random` on this machine); then each case's anchor is measured as anchors.py measures it
(triton.testing.do_bench, median): cuBLAS (torch.matmul) for gemm, PyTorch SDPA's flash and cuDNN
backends for attention, at the same shape and dtype. Prints one table (TFLOP/s and the ratio to the
anchor) and writes it to $OUT/bench.md when OUT is set.
"""
import json
import os
import re
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def manifest(case_dir):
    with open(os.path.join(case_dir, "manifest.json")) as f:
        return json.load(f)


def values(m):
    """Sizes and scalars of a case by name."""
    return {a["name"]: a["value"] for a in m.get("args", []) if a["kind"] in ("size", "scalar")}


def tensors(m):
    return [a for a in m.get("args", []) if a["kind"] == "tensor"]


def anchors(m, cache):
    """[(name, ms)] of the anchor(s) for a case; cached by shape, so both targets share one."""
    v, ts = values(m), tensors(m)
    kernel = m["kernel"]
    if kernel.startswith("gemm"):
        a, b = ts[0], ts[1]
        key = ("gemm", tuple(a["shape"]), tuple(b["shape"]), a["dtype"], kernel.endswith("_nt"))
        if key not in cache:
            x = torch.randn(*a["shape"], device="cuda", dtype=DTYPES[a["dtype"]])
            y = torch.randn(*b["shape"], device="cuda", dtype=DTYPES[b["dtype"]])
            if kernel.endswith("_nt"):
                cache[key] = [("cuBLAS", do_bench(lambda: x @ y.T, return_mode="median"))]
            else:
                cache[key] = [("cuBLAS", do_bench(lambda: x @ y, return_mode="median"))]
            del x, y
        return cache[key]
    if "attention" in kernel:  # q [bh, s, d], v [bh, t, d] (k may be stored transposed)
        q, v_arg = next(a for a in ts if a["name"] == "q"), next(a for a in ts if a["name"] == "v")
        bh, s, d = q["shape"]
        t = v_arg["shape"][1]
        causal = bool(v.get("causal", False))
        heads = 2048 // d if bh % (2048 // d) == 0 else 1  # anchors.py's heads, batch = bh / heads
        key = ("attention", bh, s, t, d, causal)
        if key not in cache:
            q = torch.randn(bh // heads, heads, s, d, device="cuda", dtype=torch.bfloat16)
            k, vv = (torch.randn(bh // heads, heads, t, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            found = []
            for name, backend in [("SDPA flash", SDPBackend.FLASH_ATTENTION), ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)]:
                try:
                    with sdpa_kernel(backend):
                        found.append((name, do_bench(lambda: F.scaled_dot_product_attention(q, k, vv, is_causal=causal),
                                                     return_mode="median")))
                except Exception as e:  # a backend this GPU or shape lacks: said, not hidden
                    print(f"{name} failed: {str(e)[:200]}", flush=True)
            cache[key] = found
            del q, k, vv
        return cache[key]
    return []


def main():
    args = sys.argv[1:]
    count = 50
    if "--time" in args:
        i = args.index("--time")
        count = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit("usage: bench.py DIR [--time N]")
    root = args[0]
    cases = os.path.join(root, "bench-cases")
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    # One gpu_check process a case: a kernel that faults cannot spoil the timings after it.
    timed, failed = {}, []
    for name in sorted(os.listdir(cases)):
        if not os.path.isfile(os.path.join(cases, name, "manifest.json")):
            continue
        run = subprocess.run([os.path.join(root, "gpu_check"), "--time", str(count), os.path.join(cases, name)],
                             capture_output=True, text=True)
        lines = [line for line in (run.stdout + run.stderr).splitlines() if not line.startswith("gpu_check: ")]
        print(*lines, sep="\n", flush=True)
        for line in lines:
            hit = re.match(r"TIME (\S+): median ([0-9.]+) ms", line)
            if hit:
                timed[hit.group(1)] = float(hit.group(2))
        if run.returncode != 0:
            failed.append(name)

    rows = []
    cache = {}
    for name in sorted(os.listdir(cases)):
        case_dir = os.path.join(cases, name)
        if not os.path.isfile(os.path.join(case_dir, "manifest.json")):
            continue
        m = manifest(case_dir)
        flops = m.get("flops", 0)
        ours = timed.get(name)
        if not m.get("generated", False):
            rows.append((name, "not generated", "", "", "", ""))
            continue
        found = anchors(m, cache)
        ours_tf = f"{flops / ours / 1e9:.0f}" if ours and flops else "failed"
        for anchor, ms in found or [("-", None)]:
            ref_tf = f"{flops / ms / 1e9:.0f}" if ms and flops else ""
            ratio = f"{ms / ours:.2f}" if ms and ours else ""
            rows.append((name, f"{ours:.3f}" if ours else "-", ours_tf, anchor, ref_tf, ratio))

    table = ["| case | weft ms | weft TFLOP/s | anchor | anchor TFLOP/s | weft / anchor |", "|---|---|---|---|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(table) + f"\n\n{torch.cuda.get_device_name()}, gpu_check --time {count} (median), anchors by do_bench (median)\n"
    print("\n" + text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "bench.md"), "w") as f:
            f.write(text)
    if failed:
        print("failed (not generated, a NaN, or a launch error):", *failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
