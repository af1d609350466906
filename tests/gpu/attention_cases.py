#!/usr/bin/env python3
"""The attention kernels' GPU check, in two halves (tests/gpu/README.md), as gemm_cases.py does it.

  attention_cases.py prepare DIR WEFT   here: PTX (`weft build --emit=ptx`), fresh random inputs,
                                        and the cases' run_kernel lines appended to DIR/cases.txt
  attention_cases.py check DIR          on the GPU machine: each output against a float64 softmax
                                        attention of the same inputs, relative error under 1e-2
"""
import os
import subprocess
import sys

import numpy as np

from gemm_cases import from_npy, rounded, to_npy

KERNELS = [  # (file, kernel, head dim)
    ("tests/lit/sim/attention_d64.weft", "attention64", 64),
    ("tests/lit/sim/attention_d128.weft", "attention128w8", 128),
]
SHAPES = [(1, 128), (2, 256), (4, 1024)]  # (batch x heads, sequence)
TARGETS = ["sm_80"]
SCALE = 0.125


def prepare(out, weft):
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    lines = []
    for file, kernel, d in KERNELS:
        for target in TARGETS:
            ptx = f"{kernel}_{target}.ptx"
            with open(os.path.join(out, ptx), "w") as f:
                subprocess.run([weft, "build", file, "--kernel", kernel, "--target", target, "--emit=ptx"],
                               stdout=f, check=True)
            header = open(os.path.join(out, ptx)).readline()  # `// weft: entry E, T threads, S bytes ...`
            threads = header.split(" threads, ")[0].split()[-1]
            shared = header.split(" threads, ")[1].split()[0]
            for bh, s in SHAPES:
                for causal in (0, 1):
                    name = f"{kernel}_{target}_{bh}x{s}_causal{causal}"
                    q = rounded(rng.standard_normal((bh, s, d)), "bf16")
                    kt = rounded(rng.standard_normal((bh, d, s)), "bf16")
                    v = rounded(rng.standard_normal((bh, s, d)), "bf16")
                    for x, arr in (("q", q), ("kt", kt), ("v", v)):
                        to_npy(os.path.join(out, f"{name}_{x}.npy"), arr, "bf16")
                    lines.append(f"{name} {ptx} {kernel} --grid {s // 64},{bh} --threads {threads} --shared {shared} "
                                 f"in:{name}_q.npy in:{name}_kt.npy in:{name}_v.npy "
                                 f"out:{name}_o.npy:f32:{bh}x{s}x{d} i64:{bh} i64:{s} f32:{SCALE} i32:{causal}")
    with open(os.path.join(out, "cases.txt"), "a") as f:
        f.write("\n".join(lines) + "\n")


def check(out):
    failures = 0
    for line in open(os.path.join(out, "cases.txt")):
        name = line.split()[0]
        if "_causal" not in name:
            continue
        path = os.path.join(out, name + "_o.npy")
        if not os.path.exists(path):
            print(f"FAIL {name}: no output")
            failures += 1
            continue
        q, kt, v = (from_npy(os.path.join(out, f"{name}_{x}.npy")) for x in ("q", "kt", "v"))
        o = np.load(path).astype(np.float64)
        scores = SCALE * (q @ kt)
        if name.endswith("causal1"):
            s = scores.shape[-1]
            scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -1.0e30)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        ref = (p / p.sum(-1, keepdims=True)) @ v
        err = np.linalg.norm(o - ref) / np.linalg.norm(ref)
        ok = err < 1e-2 and not np.isnan(o).any()
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: relative error {err:.2e}, max abs error {np.abs(o - ref).max():.3g}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(check(sys.argv[2]))
