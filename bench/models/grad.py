#!/usr/bin/env python3
"""grad.py LIBRARY...: bench/models/grad.weft's exports of each library (`weft build --shared`),
beside PyTorch eager in the same process: a linear layer's backward, s = 8192 tokens, 4096 x 4096
(dW = x^T dy, dX = dy w^T). Each result is checked against an f32 reference from the same bf16
inputs (relative error under 2e-2), then do_bench medians (ms), interleaved, four rounds."""
import sys, statistics, torch, weft
from triton.testing import do_bench
S, I, O = 8192, 4096, 4096
g = torch.Generator(device="cuda"); g.manual_seed(0)
def randn(*shape):
    return (torch.randn(*shape, device="cuda", generator=g) * shape[-1] ** -0.5).to(torch.bfloat16)
x, dy, w = randn(S, I), randn(S, O), randn(I, O)
cases = {"weight_grad": ((x, dy), lambda: x.t() @ dy, (x.float().t() @ dy.float())),
         "input_grad": ((dy, w), lambda: dy @ w.t(), (dy.float() @ w.float().t()))}
mods = [(p, weft.load(p)) for p in sys.argv[1:]]
ok = True
for name, (args, torch_fn, ref) in cases.items():
    for p, m in mods:
        out = getattr(m, name)(*args).float()
        err = ((out - ref).norm() / ref.norm()).item()
        ok = ok and err < 2e-2
        print("%-12s %-40s rel err %.3g %s" % (name, p, err, "PASS" if err < 2e-2 else "FAIL"))
times = {}
for r in range(4):
    for name, (args, torch_fn, _) in cases.items():
        for p, m in mods:
            fn = getattr(m, name)
            times.setdefault((name, p), []).append(do_bench(lambda: fn(*args), warmup=25, rep=200, return_mode="median"))
        times.setdefault((name, "torch"), []).append(do_bench(torch_fn, warmup=25, rep=200, return_mode="median"))
for (name, p), t in times.items():
    print("%-12s %-40s %s  median %.4f ms" % (name, p, " ".join("%.4f" % v for v in t), statistics.median(t)))
sys.exit(0 if ok else 1)
