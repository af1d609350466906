"""The cost of calling a weft function from PyTorch, taken apart, beside Triton's launch and
PyTorch's own op (docs/python.md). The kernels' own time comes from the profiler (CUPTI), the cost
of a call from back-to-back calls on the host clock.

    PYTHONPATH=python python3 tests/gpu/python/overhead.py .gpu/libops.so
"""

import array
import ctypes
import sys
import time

import torch
import triton
import triton.language as tl

import weft
from weft import _library as lib
from weft._call import _capsule_new, _DLTENSOR


@triton.jit
def scale_add_kernel(x_ptr, b_ptr, y_ptr, d, total, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < total
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 2.0 + tl.load(b_ptr + i % d, mask=m), mask=m)


def triton_scale_add(x, b):
    y = torch.empty_like(x)
    n = x.numel()
    scale_add_kernel[(triton.cdiv(n, 1024),)](x, b, y, x.shape[1], n, BLOCK=1024)
    return y


def per_call_us(fn, calls=3000, repeats=5):
    for _ in range(100):
        fn()
    best = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best.append((time.perf_counter() - t0) / calls * 1e6)
    return sorted(best)[len(best) // 2]


def kernel_us(fn, calls=200):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = getattr(e, "self_cuda_time_total", 0.0)
        if "memcpy" in e.key.lower() or "memset" in e.key.lower():
            continue
        total += t
    return total / calls


mod = weft.load(sys.argv[1])
print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, flush=True)
rows = []
for shape in [(256, 256), (1024, 1024)]:
    x = torch.randn(*shape, device="cuda")
    b = torch.randn(shape[1], device="cuda")
    f = mod.scale_add
    e = f._export(["f32", "f32"], [2, 1])
    packed = array.array("q", [x.data_ptr(), 2, 15, 2, shape[0], shape[1], b.data_ptr(), 2, 15, 1, shape[1]])
    results = array.array("Q", bytes(8))
    stream = torch._C._cuda_getCurrentRawStream(0)
    call, address, a, r = e.library.call, e.address, packed.buffer_info()[0], results.buffer_info()[0]
    from_dlpack = torch._C._from_dlpack

    def raw_dlpack():
        call(address, a, stream, lib.RESULTS_DEVICE, r)
        return from_dlpack(_capsule_new(results[0], _DLTENSOR, None))

    def raw_release():
        call(address, a, stream, lib.RESULTS_DEVICE, r)
        lib.release(results[0])

    def raw_shapes():
        call(address, a, stream, lib.RESULTS_SHAPES, r)
        lib.release(results[0])

    cases = [
        ("weft mod.scale_add(x, b)", lambda: f(x, b)),
        ("weft op (torch.library)", lambda: f.op(x, b)),
        ("  library call + DLPack (no Python args)", raw_dlpack),
        ("  library call + ctypes release", raw_release),
        ("  library call, shapes only (no GPU work)", raw_shapes),
        ("  an empty ctypes call (weft_last_error)", e.library.last_error),
        ("triton scale_add launch", lambda: triton_scale_add(x, b)),
        ("torch x * 2 + b (2 kernels)", lambda: x * 2.0 + b),
        ("torch.add(x, b, alpha=1) (1 kernel)", lambda: torch.add(x, b)),
    ]
    for name, fn in cases:
        host = per_call_us(fn)
        gpu = kernel_us(fn) if not name.startswith("  ") or "DLPack" in name else 0.0
        rows.append((shape, name, host, gpu))
        print("%-10s %-44s %7.2f us/call  kernels %6.2f us  over kernels %7.2f us" % (
            "%dx%d" % shape, name, host, gpu, host - gpu), flush=True)
