#!/usr/bin/env python3
"""bench/array: the array tier's generated kernels beside PyTorch, in one run on one GPU
(bench/array/README.md):

  bench.py DIR

DIR holds the executables chain.sm_90a, norms.sm_90a and epilogue.sm_90a (tests/gpu/prepare-carry
--bench). Each
prints the milliseconds of three timed runs (GPU events; the best is reported). PyTorch is measured
as ../shared/bench/anchors.py measures (triton.testing.do_bench, median): the copy bandwidth of 1 GiB
(y.copy_(x)), torch.softmax, F.layer_norm and F.rms_norm over [16384, 4096] bf16, torch.matmul and F.relu(torch.addmm(b, x, w)) at 4096^3 bf16. Prints one table
and writes it to $OUT/array.md when OUT is set.
"""
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench


def run(exe):
    out = subprocess.run([exe], capture_output=True, text=True, timeout=600, cwd=os.path.dirname(exe))
    if out.returncode != 0:
        raise RuntimeError(f"{exe}: exit {out.returncode}: {out.stderr.strip()[:500]}")
    return [float(line) for line in out.stdout.split()]


def main():
    folder = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    target = sys.argv[2] if len(sys.argv) > 2 else "sm_90a"
    rows = []
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)

    # Copy bandwidth: 1 GiB read + 1 GiB written.
    n = 1 << 30
    x = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    y = torch.empty_like(x)
    copy_ms = do_bench(lambda: y.copy_(x), warmup=50, rep=300, return_mode="median")
    copy_gbs = 2 * n / copy_ms / 1e6
    del x, y
    torch.cuda.empty_cache()

    chain = run(os.path.join(folder, f"chain.{target}"))
    ms = min(chain)
    gbs = 2 * (1 << 30) / ms / 1e6
    rows.append(("elementwise chain, 1 GiB f32 (6 ops)", f"{ms * 1e3:.0f} us", f"{gbs:.0f} GB/s",
                 f"copy {copy_gbs:.0f} GB/s", f"{gbs / copy_gbs:.2f}"))

    norms = run(os.path.join(folder, f"norms.{target}"))
    x = torch.rand(16384, 4096, device="cuda", dtype=torch.bfloat16)
    g = torch.rand(4096, device="cuda", dtype=torch.bfloat16)
    b = torch.rand(4096, device="cuda", dtype=torch.bfloat16)
    anchors = [
        ("softmax", lambda: torch.softmax(x, dim=-1)),
        ("layernorm", lambda: F.layer_norm(x, (4096,), g, b, eps=1e-5)),
        ("rmsnorm", lambda: F.rms_norm(x, (4096,), g, eps=1e-6)),
    ]
    nbytes = 2 * 16384 * 4096 * 2  # read and write the bf16 rows
    for i, (name, fn) in enumerate(anchors):
        ours = min(norms[3 * i:3 * i + 3])
        theirs = do_bench(fn, warmup=25, rep=200, return_mode="median")
        rows.append((f"{name} [16384, 4096] bf16", f"{ours * 1e3:.0f} us", f"{nbytes / ours / 1e6:.0f} GB/s",
                     f"PyTorch {theirs * 1e3:.0f} us", f"{theirs / ours:.2f}"))

    # A product alone and with its epilogue fused (epilogue.weft), beside cuBLAS (torch.matmul,
    # and addmm + relu: cuBLAS's bias epilogue, then PyTorch's ReLU kernel).
    epilogue_exe = os.path.join(folder, f"epilogue.{target}")
    if os.path.exists(epilogue_exe):
        times = run(epilogue_exe)
        n = 4096
        x = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        w = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        b = torch.rand(n, device="cuda", dtype=torch.bfloat16) - 0.5
        flop = 2 * n ** 3
        anchors = [
            ("x @ w, 4096^3 bf16", lambda: torch.matmul(x, w), "torch.matmul"),
            ("maximum (x @ w + b) 0.0, 4096^3 bf16", lambda: F.relu(torch.addmm(b, x, w)), "relu(addmm)"),
        ]
        for i, (name, fn, anchor) in enumerate(anchors):
            ours = min(times[3 * i:3 * i + 3])
            theirs = do_bench(fn, warmup=25, rep=200, return_mode="median")
            rows.append((name, f"{ours * 1e3:.0f} us", f"{flop / ours / 1e9:.0f} TFLOP/s",
                         f"{anchor} {theirs * 1e3:.0f} us", f"{theirs / ours:.2f}"))

    head = ("| kernel | weft | weft bandwidth | anchor | ratio (>= 1: weft at or above) |\n"
            "|---|---|---|---|---|")
    text = head + "\n" + "\n".join("| " + " | ".join(r) + " |" for r in rows)
    text += f"\n\n({torch.cuda.get_device_name()}, {target}; the chain's ratio is to the copy bandwidth, the norms' " \
            "is PyTorch's time over weft's)"
    print("\n" + text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "array.md"), "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
