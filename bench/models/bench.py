#!/usr/bin/env python3
"""bench/models: user-style weft model code called from PyTorch through the Python package, beside
the same model in PyTorch eager, in one process on one GPU (bench/models/README.md):

    bench.py LIBRARY      # libblock.so, from `weft build --shared bench/models/block.weft`

For each size: fresh random bf16 inputs; weft's `ffn` (`x + gelu (rmsnorm x g @ w1) @ w2`) and
PyTorch's eager version of the same formula are compared with an f32 reference computed from the
same bf16 inputs (‖out − ref‖ / ‖ref‖, bf16's range is 1e-3 to 1e-2; NaN fails), then timed with
triton.testing.do_bench (median, milliseconds, each call through the package as a user makes it).
`norm` (RMSNorm alone) is checked and timed beside F.rms_norm. Prints one line per check and a
table (also $OUT/models.md when OUT is set); exits 1 if a check failed.
"""

import os
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench

import weft

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import BOUND, check, failures, rel, write_report  # noqa: E402  (bench/checks.py)

SIZES = [(2048, 2048, 8192), (8192, 4096, 16384)]  # (tokens n, model width d, hidden h)


def gelu(x):
    return x * torch.sigmoid(1.702 * x)


def ffn_torch(x, g, w1, w2):
    return x + gelu(F.rms_norm(x, (x.shape[-1],), g, eps=1e-6) @ w1) @ w2


def main():
    mod = weft.load(sys.argv[1])
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 reference in f32
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    print("exports:", [s for _, s in mod.exports()], flush=True)
    rows = []
    for n, d, h in SIZES:
        gen = torch.Generator(device="cuda").manual_seed(n + d + h)

        def randn(*shape, scale=1.0):
            return (torch.randn(*shape, device="cuda", generator=gen) * scale).to(torch.bfloat16)

        x, g = randn(n, d), 1 + randn(d, scale=0.1)
        w1, w2 = randn(d, h, scale=d ** -0.5), randn(h, d, scale=h ** -0.5)
        size = "n=%d d=%d h=%d" % (n, d, h)

        ref = ffn_torch(x.float(), g.float(), w1.float(), w2.float())
        ours, eager = mod.ffn(x, g, w1, w2), ffn_torch(x, g, w1, w2)
        e_ours, e_eager = rel(ours, ref), rel(eager, ref)
        check("ffn %s" % size, ours.shape == ref.shape and ours.dtype == torch.bfloat16 and e_ours < BOUND,
              "weft %.2e, torch eager %.2e from the f32 reference" % (e_ours, e_eager))
        flops = 2 * 2 * n * d * h
        t_ours = do_bench(lambda: mod.ffn(x, g, w1, w2), warmup=50, rep=300, return_mode="median")
        t_eager = do_bench(lambda: ffn_torch(x, g, w1, w2), warmup=50, rep=300, return_mode="median")
        rows.append(("ffn", size, t_ours, t_eager, "%.0f / %.0f TFLOP/s" % (flops / t_ours / 1e9, flops / t_eager / 1e9),
                     e_ours, e_eager))

        ref = F.rms_norm(x.float(), (d,), g.float(), eps=1e-6)
        ours, eager = mod.norm(x, g), F.rms_norm(x, (d,), g, eps=1e-6)
        e_ours, e_eager = rel(ours, ref), rel(eager, ref)
        check("norm %s" % size, ours.shape == ref.shape and e_ours < BOUND,
              "weft %.2e, torch eager %.2e from the f32 reference" % (e_ours, e_eager))
        nbytes = 2 * n * d * 2
        t_ours = do_bench(lambda: mod.norm(x, g), warmup=50, rep=300, return_mode="median")
        t_eager = do_bench(lambda: F.rms_norm(x, (d,), g, eps=1e-6), warmup=50, rep=300, return_mode="median")
        rows.append(("norm", "n=%d d=%d" % (n, d), t_ours, t_eager,
                     "%.0f / %.0f GB/s" % (nbytes / t_ours / 1e6, nbytes / t_eager / 1e6), e_ours, e_eager))

    table = ["| model | size | weft ms | PyTorch eager ms | eager / weft | rate (weft / eager) | error weft | error eager |",
             "|---|---|---|---|---|---|---|---|"]
    for name, size, t_ours, t_eager, rate, e_ours, e_eager in rows:
        table.append("| %s | %s | %.4f | %.4f | %.2f | %s | %.1e | %.1e |" % (
            name, size, t_ours, t_eager, t_eager / t_ours, rate, e_ours, e_eager))
    text = "\n".join(["%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__), ""] + table)
    print(text, flush=True)
    write_report(text, "models.md")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
