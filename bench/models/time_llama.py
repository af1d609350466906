#!/usr/bin/env python3
"""time_llama.py LIBRARY...: `llama` and `block` of each build of bench/models/llama.weft's library
(README.md): the first's `llama` result beside each other's, then four do_bench medians (ms) of each
function of each library, interleaved, then each one's kernels under the profiler (us a call)."""
import sys, statistics, torch, weft
from triton.testing import do_bench
S, D, H = 2048, 4096, 11008
g = torch.Generator(device="cuda"); g.manual_seed(0)
def randn(*shape, scale=1.0):
    return (torch.randn(*shape, device="cuda", generator=g) * scale).to(torch.bfloat16)
inputs = [randn(S, D), 1 + randn(D, scale=0.1)] + [randn(D, D, scale=D ** -0.5) for _ in range(4)] + \
    [1 + randn(D, scale=0.1), randn(H, D, scale=D ** -0.5), randn(H, D, scale=D ** -0.5), randn(D, H, scale=H ** -0.5)]
mods = [weft.load(p) for p in sys.argv[1:]]
outs = [m.llama(*inputs) for m in mods]
for i, o in enumerate(outs[1:]):
    print("llama %s vs %s: max abs diff %.3g" % (sys.argv[i + 2], sys.argv[1], (o.float() - outs[0].float()).abs().max().item()))
times = {(p, f): [] for p in sys.argv[1:] for f in ("llama", "block")}
for r in range(4):
    for p, m in zip(sys.argv[1:], mods):
        for f in ("llama", "block"):
            fn = getattr(m, f)
            times[(p, f)].append(do_bench(lambda: fn(*inputs), warmup=50, rep=300, return_mode="median"))
for (p, f), t in times.items():
    print("%-40s %-6s %s  median %.4f" % (p, f, " ".join("%.4f" % x for x in t), statistics.median(t)))
for p, m in zip(sys.argv[1:], mods):
    for f in ("llama", "block"):
        fn = getattr(m, f)
        for _ in range(3): fn(*inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5): fn(*inputs)
            torch.cuda.synchronize()
        print("== %s %s kernels (us per call)" % (p, f))
        rows = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                rows.setdefault(e.name, []).append(e.device_time)
        total = 0
        for name, ts in sorted(rows.items(), key=lambda kv: -sum(kv[1])):
            total += sum(ts) / 5
            print("  %9.1f us  x%-3d %s" % (sum(ts) / 5, len(ts) // 5, name[:90]))
        print("  %9.1f us  total" % total)
