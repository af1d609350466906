#!/usr/bin/env python3
"""The gemm kernels' GPU check, in two halves (tests/gpu/README.md).

  gemm_cases.py prepare DIR WEFT   here: PTX of each stdlib gemm kernel (`weft build --emit=ptx`),
                                   fresh random inputs as .npy, and cases.txt (one run_kernel line each)
  gemm_cases.py check DIR          on the GPU machine, after run_kernel wrote the outputs: each output
                                   against a float64 product of the same inputs, ‖out − ref‖/‖ref‖ < 1e-2
                                   (bf16/f16 inputs, f32 accumulation: gpu.md), NaN never
"""
import os
import subprocess
import sys

import numpy as np

KERNELS = [  # (file, kernel, a dtype, b stored transposed, out dtype)
    ("stdlib/gemm.weft", "gemm_bf16", "bf16", False, "f32"),
    ("stdlib/gemm.weft", "gemm_f16", "f16", False, "f32"),
    ("stdlib/gemm.weft", "gemm_bf16_nt", "bf16", True, "f32"),
    ("stdlib/gemm.weft", "gemm_f16_nt", "f16", True, "f32"),
    ("examples/gemm_kernel.weft", "gemm", "bf16", False, "bf16"),
]
SIZES = [(256, 256, 256), (512, 384, 1024), (2048, 2048, 1024)]  # (m, n, k); the last is timed
TARGETS = ["sm_80", "sm_90a"]


def to_npy(path, x, dtype):
    if dtype == "bf16":
        bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact: x is bf16-valued
        np.save(path, bits.astype([("bf16", "<u2")]).view(np.dtype([("bf16", "<u2")])))
    else:
        np.save(path, x.astype(np.float16 if dtype == "f16" else np.float32))


def from_npy(path):
    x = np.load(path)
    if x.dtype.names == ("bf16",):
        return (x["bf16"].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def rounded(x, dtype):
    if dtype == "bf16":
        bits = x.astype(np.float32).view(np.uint32)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
        return bits.view(np.float32)
    return x.astype(np.float16).astype(np.float32)


def prepare(out, weft):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))  # fresh inputs every time
    lines = []
    for file, kernel, dtype, nt, odtype in KERNELS:
        for target in TARGETS:
            ptx = f"{kernel}_{target}.ptx"
            with open(os.path.join(out, ptx), "w") as f:
                subprocess.run([weft, "build", file, "--kernel", kernel, "--target", target, "--emit=ptx"],
                               stdout=f, check=True)
            header = [l for l in open(os.path.join(out, ptx)) if l.startswith("// weft:")]
            shared = header[0].split(" threads, ")[1].split()[0]
            # TMA maps (sm_90a): `// weft: tensor map of parameter P (x): box C x R (columns x rows), swizzle S`
            maps = []
            for l in header[1:]:
                words = l.split()
                maps.append((int(words[6]), int(words[9]), int(words[11]), words[-1]))
            # The largest size only for gemm_bf16 on sm_80: the carry to the GPU machine is limited.
            for m, n, k in SIZES if (target, kernel) == ("sm_80", "gemm_bf16") else SIZES[:2]:
                name = f"{kernel}_{target}_{m}x{n}x{k}"
                a = rounded(rng.standard_normal((m, k)), dtype)
                b = rounded(rng.standard_normal((n, k) if nt else (k, n)), dtype)
                to_npy(os.path.join(out, name + "_a.npy"), a, dtype)
                to_npy(os.path.join(out, name + "_b.npy"), b, dtype)
                grid = f"{m // 128},{n // 128}"
                shapes = [(m, k), (n, k) if nt else (k, n), (m, n)]
                dtypes = [dtype, dtype, odtype]
                tmaps = "".join(f" tmap:{p}:{dtypes[p]}:{shapes[p][0]}:{shapes[p][1]}:{r}:{c}:{swz}"
                                for p, c, r, swz in maps)
                lines.append(f"{name} {ptx} {kernel} --grid {grid} --threads 128 --shared {shared} "
                             f"in:{name}_a.npy in:{name}_b.npy out:{name}_c.npy:{odtype}:{m}x{n} "
                             f"i64:{m} i64:{k} i64:{n}{tmaps}")
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def check(out):
    failures = 0
    for line in open(os.path.join(out, "cases.txt")):
        name, _, kernel = line.split()[:3]
        if not kernel.startswith("gemm"):
            continue
        path = os.path.join(out, name + "_c.npy")
        if not os.path.exists(path):
            print(f"FAIL {name}: no output")
            failures += 1
            continue
        a, b, c = (from_npy(os.path.join(out, f"{name}_{x}.npy")) for x in "abc")
        ref = a @ (b.T if kernel.endswith("_nt") else b)
        err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
        ok = err < 1e-2 and not np.isnan(c).any()
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: relative error {err:.2e}, max abs error {np.abs(c - ref).max():.3g}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(check(sys.argv[2]))
