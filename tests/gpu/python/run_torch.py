"""weft from PyTorch on a GPU (docs/python.md): correctness, zero copy, streams, torch.compile, and
the cost of a call beside Triton's launch from Python. Runs on the lent GPU machine, which has
PyTorch and Triton but no weft compiler: the library is built here and carried.

    weft build --shared tests/gpu/python/ops.weft -o .gpu/libops.so \
        --instance 'soft bf16[_, _]' --instance 'soft f32[_, _, _]'
    # there: PYTHONPATH=python python3 tests/gpu/python/run_torch.py .gpu/libops.so

Prints one line per check (PASS/FAIL) and the timings; exits 1 if a check failed, 77 without a GPU.
"""

import ctypes
import json
import statistics
import sys
import time

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

# ---- the cost of a call: weft vs Triton, a one-kernel function on a small tensor ----
timing = {}
try:
    import triton
    import triton.language as tl

    @triton.jit
    def scale_add_kernel(x_ptr, b_ptr, y_ptr, d, total, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < total
        v = tl.load(x_ptr + i, mask=m) * 2.0 + tl.load(b_ptr + i % d, mask=m)
        tl.store(y_ptr + i, v, mask=m)

    def triton_scale_add(x, b):
        y = torch.empty_like(x)
        n = x.numel()
        scale_add_kernel[(triton.cdiv(n, 1024),)](x, b, y, x.shape[1], n, BLOCK=1024)
        return y
except ImportError:
    triton_scale_add = None


def measure(name, fn, *args, calls=2000, repeats=5):
    for _ in range(50):
        fn(*args)
    torch.cuda.synchronize()
    # GPU time of one call (events around each, the GPU idle before): the kernel's own time.
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    gpu = []
    for _ in range(200):
        torch.cuda.synchronize()
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        gpu.append(start.elapsed_time(end) * 1000)
    # Wall time per call of back-to-back calls (what a Python loop pays), median of repeats.
    wall = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) / calls * 1e6)
    # Host time of one call alone (launch only, the GPU not waited for).
    host = []
    for _ in range(200):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        host.append((time.perf_counter() - t0) * 1e6)
    r = {"gpu_us": statistics.median(gpu), "wall_us_per_call": statistics.median(wall),
         "host_us_per_call": statistics.median(host)}
    r["over_kernel_us"] = r["wall_us_per_call"] - r["gpu_us"]
    timing[name] = r
    print("%-28s kernel %.2f us (events), back-to-back %.2f us/call, host %.2f us/call, over kernel %.2f us" % (
        name, r["gpu_us"], r["wall_us_per_call"], r["host_us_per_call"], r["over_kernel_us"]), flush=True)


for shape in [(1024, 1024), (4096, 4096)]:
    xs = randn(*shape)
    bs = randn(shape[1])
    tag = "%dx%d" % shape
    measure("weft scale_add " + tag, mod.scale_add, xs, bs)
    if triton_scale_add is not None:
        measure("triton scale_add " + tag, triton_scale_add, xs, bs)
    measure("torch x*2+b " + tag, lambda x, b: x * 2.0 + b, xs, bs)
    measure("weft op (torch.library) " + tag, mod.scale_add.op, xs, bs)
report["timing"] = timing

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
