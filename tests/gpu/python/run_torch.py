"""weft from PyTorch on a GPU (docs/python.md): correctness, zero copy, streams, shape errors,
torch.compile, and rmsnorm beside PyTorch's in one process. Runs on the lent GPU machine, which has
PyTorch and Triton but no weft compiler: the library is built here and carried.

    weft build --shared tests/gpu/python/ops.weft -o .gpu/libops.so \
        --instance 'soft bf16[_, _]' --instance 'soft f32[_, _, _]'
    # there: PYTHONPATH=python python3 tests/gpu/python/run_torch.py .gpu/libops.so

Prints one line per check (PASS/FAIL) and the timings; exits 1 if a check failed, 77 without a GPU.
"""

import ctypes
import json
import sys

try:
    import torch
except ImportError:
    print("SKIP: no PyTorch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no GPU")
    sys.exit(77)

import weft
from weft import _library as lib

failures = []
report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}


def check(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""), flush=True)
    if not ok:
        failures.append(name)


def rel(out, ref):
    out = out.double()
    ref = ref.double()
    return float((out - ref).norm() / ref.norm())


mod = weft.load(sys.argv[1])
print("exports:", [s for _, s in mod.exports()], flush=True)
g = torch.Generator(device="cuda").manual_seed(0)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=torch.float32, generator=g).to(dtype)


# ---- correctness ----
x = randn(1024, 1024)
b = randn(1024)
y = mod.scale_add(x, b)
check("scale_add f32 matches torch", rel(y, x * 2.0 + b) < 1e-6, "rel %.2e" % rel(y, x * 2.0 + b))
check("scale_add result is a CUDA tensor", y.is_cuda and y.dtype == torch.float32 and tuple(y.shape) == (1024, 1024))
x2, b2 = randn(1024, 1024), randn(1024)  # the first call's plan, with other tensors' addresses
check("scale_add again, new tensors of the same shapes", rel(mod.scale_add(x2, b2), x2 * 2.0 + b2) < 1e-6,
      "plans %d" % len(mod.scale_add._plans))
# Results dropped at once give their blocks to the next call on the default stream (runtime.cpp's
# KeptBlocks); results kept alive are never handed out again.
inputs = [(randn(1024, 1024), randn(1024)) for _ in range(4)]
dropped_ok = all(rel(mod.scale_add(xi, bi), xi * 2.0 + bi) < 1e-6 for _ in range(8) for xi, bi in inputs)
kept = [(mod.scale_add(xi, bi), xi, bi) for _ in range(3) for xi, bi in inputs]
check("results dropped and reused, results kept alive",
      dropped_ok and len({y.data_ptr() for y, _, _ in kept}) == len(kept) and
      all(rel(y, xi * 2.0 + bi) < 1e-6 for y, xi, bi in kept))
del kept
xt = randn(512, 1024).t()  # strided: made contiguous by PyTorch before the call
check("scale_add of a transposed tensor and a slice", rel(mod.scale_add(xt, b2[:512]), xt * 2.0 + b2[:512]) < 1e-6)

xb = randn(4096, 4096, dtype=torch.bfloat16)
gb = randn(4096, dtype=torch.bfloat16)
yb = mod.rms(xb, gb)
ref = torch.nn.functional.rms_norm(xb.float(), (4096,), gb.float(), eps=None)
err = rel(yb, ref)
check("rms bf16 matches torch (f32 reference)", err < 1e-2, "rel %.2e" % err)

s, q = mod.pair(b)
check("pair: two results", rel(s, b + 1) < 1e-6 and rel(q, b * b) < 1e-6)

xs = randn(64, 1000, dtype=torch.bfloat16)
ys = mod.soft(xs)
err = rel(ys, torch.softmax(xs.float(), -1))
check("soft bf16[_, _] instance", err < 1e-2, "rel %.2e" % err)
x3 = randn(4, 8, 300)
err = rel(mod.soft(x3), torch.softmax(x3, -1))
check("soft f32[_, _, _] instance", err < 1e-5, "rel %.2e" % err)

# ---- zero copy: the result's memory is the buffer the kernel wrote (read before DLPack takes it) ----
e = mod.scale_add._export(["f32", "f32"], [2, 1])
values = [x.data_ptr(), 2, 15, 2, 1024, 1024, b.data_ptr(), 2, 15, 1, 1024]
results = (ctypes.c_void_p * 1)()
status = e.library.call(e.address, (ctypes.c_int64 * len(values))(*values),
                        torch._C._cuda_getCurrentRawStream(0), lib.RESULTS_DEVICE, results)
written = lib.managed(results[0]).dl_tensor.data
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
t = torch.from_dlpack(ctypes.pythonapi.PyCapsule_New(results[0], b"dltensor", None))
check("zero copy: the tensor's data_ptr is the buffer the kernel wrote",
      status == 0 and t.data_ptr() == written and written not in (x.data_ptr(), b.data_ptr()),
      "0x%x" % (written or 0))
check("zero copy: its values", rel(t, x * 2.0 + b) < 1e-6)

# ---- shape errors ----
try:
    mod.scale_add(x, randn(1000))
    check("ShapeError for a wrong dim", False, "no error")
except weft.ShapeError as error:
    check("ShapeError for a wrong dim", "parameter `b`" in str(error), str(error))
try:
    mod.blocks(randn(6))
    check("ShapeError for a `where` fact", False, "no error")
except weft.ShapeError as error:
    check("ShapeError for a `where` fact", "n % 4 == 0" in str(error), str(error))

# ---- PyTorch's current stream ----
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    big = randn(8192, 4096)
    ys = mod.scale_add(big, randn(4096))
    zs = ys * 1.0
stream.synchronize()
check("on a side stream", bool(torch.isfinite(zs).all()) and tuple(zs.shape) == (8192, 4096))

# ---- torch.compile ----
op = mod.rms.op


def model(x, g):
    return op(x * 2, g) + 1


eager = model(xb, gb)
compiled = torch.compile(model, fullgraph=True)
try:
    out = compiled(xb, gb)
    check("torch.compile'd weft op equals eager", torch.equal(out, eager),
          "max diff %.3g" % float((out.float() - eager.float()).abs().max()))
except Exception as error:  # noqa: BLE001
    check("torch.compile'd weft op equals eager", False, repr(error)[:400])

# The cost of a call beside Triton's launch and PyTorch's op: tests/gpu/python/overhead.py (kernel
# times from the profiler; events around one call would count the host's launch too).

# ---- a bench beside PyTorch in the same process: rmsnorm bf16 [16384, 4096] ----
xr = randn(16384, 4096, dtype=torch.bfloat16)
gr = randn(4096, dtype=torch.bfloat16)
for name, fn in [("weft rms", lambda: mod.rms(xr, gr)),
                 ("torch rms_norm", lambda: torch.nn.functional.rms_norm(xr, (4096,), gr))]:
    for _ in range(10):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        fn()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / 50
    gbs = 2 * xr.numel() * 2 / ms / 1e6
    report.setdefault("rmsnorm", {})[name] = {"ms": ms, "GB/s": gbs}
    print("%-16s bf16 [16384, 4096]: %.4f ms, %.0f GB/s (read + write)" % (name, ms, gbs), flush=True)

report["failures"] = failures
print("REPORT " + json.dumps(report), flush=True)
sys.exit(1 if failures else 0)
