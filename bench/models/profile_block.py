# Per-kernel times of the Llama block: weft's `block` through the library and PyTorch eager.
import sys, statistics, torch
sys.path.insert(0, sys.argv[2])
import views
import weft
mod = weft.load(sys.argv[1])
gen = torch.Generator(device="cuda").manual_seed(1)
def randn(*shape, scale=1.0):
    return (torch.randn(*shape, device="cuda", generator=gen) * scale).to(torch.bfloat16)
inputs = views.block_inputs(randn)
for name, fn in (("weft block", lambda: mod.block(*inputs)), ("eager", lambda: views.block_torch(True, *inputs))):
    ks = views.profiled_kernels(fn, calls=20)
    total = 0.0
    print("==", name)
    for k, ts in sorted(ks.items(), key=lambda kv: -sum(kv[1])):
        per = sum(ts) / 20
        total += per
        print("%8.1f us/call  %3d x %7.1f  %s" % (per, len(ts) // 20, statistics.median(ts), k[:100]))
    print("   total %.1f us" % total)
