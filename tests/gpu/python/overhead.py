"""The cost of calling a weft function from PyTorch, taken apart, beside Triton's launch and
PyTorch's own op (docs/python.md, "The cost of a call"). The kernels' own time comes from the
profiler (CUPTI), the cost of a call from back-to-back calls on the host clock (median of 5 x 3000
calls); "over the kernels" is the one minus the other, as the issue's bar is stated.

    PYTHONPATH=python python3 tests/gpu/python/overhead.py .gpu/libops.so [BEFORE]

BEFORE: a folder holding an earlier copy of the package as `weft_before` (the same library called
through it, in the same process: a baseline measured on the same card). Prints one line a case and
a table last (also $OUT/overhead.md when OUT is set).
"""

import array
import os
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
    for _ in range(200):
        fn()
    runs = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
    return sorted(runs)[len(runs) // 2]


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
before = None
if len(sys.argv) > 2:
    sys.path.insert(0, sys.argv[2])
    import weft_before
    before = weft_before.load(sys.argv[1])
print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, flush=True)
rows = []
for shape in [(256, 256), (1024, 1024)]:
    x = torch.randn(*shape, device="cuda")
    b = torch.randn(shape[1], device="cuda")
    f = mod.scale_add
    e = f._export(["f32", "f32"], [2, 1])
    packed = array.array("q", [x.data_ptr(), 2, 15, 2, shape[0], shape[1], b.data_ptr(), 2, 15, 1, shape[1]])
    results = array.array("q", bytes(8))
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

    def reads():  # what a call must read of its arguments
        return (x.dtype, x.shape, x.get_device(), x.is_contiguous(), x.data_ptr(),
                b.dtype, b.shape, b.get_device(), b.is_contiguous(), b.data_ptr())

    cases = [("weft mod.scale_add(x, b)", lambda: mod.scale_add(x, b), True),
             ("weft f(x, b), f = mod.scale_add", lambda: f(x, b), True)]
    if before is not None:
        f_before = before.scale_add
        cases.append(("weft f(x, b), the package before", lambda: f_before(x, b), True))
    cases += [
        ("weft op (torch.library)", lambda: f.op(x, b), True),
        ("  library call + DLPack (no Python args)", raw_dlpack, True),
        ("  library call + ctypes release", raw_release, False),
        ("  library call, shapes only (no GPU work)", raw_shapes, False),
        ("  an empty ctypes call (weft_last_error)", e.library.last_error, False),
        ("  the tensor reads a call needs (2 args)", reads, False),
        ("triton scale_add launch", lambda: triton_scale_add(x, b), True),
        ("torch x * 2 + b (2 kernels)", lambda: x * 2.0 + b, True),
        ("torch.add(x, b) (1 kernel)", lambda: torch.add(x, b), True),
    ]
    for name, fn, on_gpu in cases:
        host = per_call_us(fn)
        gpu = kernel_us(fn) if on_gpu else 0.0
        rows.append(("%dx%d" % shape, name, host, gpu))
        print("%-10s %-44s %7.2f us/call  kernels %6.2f us  over kernels %7.2f us" % (
            "%dx%d" % shape, name, host, gpu, host - gpu), flush=True)

table = ["| shape | call | us/call | kernels us | over the kernels us |", "|---|---|---|---|---|"]
for shape, name, host, gpu in rows:
    table.append("| %s | %s | %.2f | %s | %s |" % (shape, name.strip(), host, "%.2f" % gpu if gpu else "",
                                                  "%.2f" % (host - gpu) if gpu else ""))
text = "\n".join([torch.cuda.get_device_name(), ""] + table)
print(text, flush=True)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "overhead.md"), "w") as out:
        out.write(text + "\n")
