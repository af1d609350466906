"""The cost of calling a weft function from PyTorch, taken apart, beside Triton's launch and
PyTorch's own op (docs/python.md, "The cost of a call"). The kernels' own time comes from the
profiler (CUPTI), the cost of a call from back-to-back calls on the host clock (median of 5 x 3000
calls); "over the kernels" is the one minus the other, as the issue's bar is stated.

    PYTHONPATH=python python3 tests/gpu/python/overhead.py .gpu/libops.so [--before DIR] [--library-before LIB]

--before DIR: a folder holding an earlier copy of the package as `weft_before`, which calls the same
library; --library-before LIB: ops.weft built with an earlier runtime, called through this package.
Both are baselines measured in the same process on the same card. The cases are timed in turns
(each round times every case once; the median of the rounds), so that a host's drift weighs on all
of them alike. Prints a table (also $OUT/overhead.md when OUT is set).
"""

import argparse
import array
import ctypes
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


def per_call_us(cases, calls=2000, rounds=7):
    """Microseconds a call of each case's back-to-back calls: the median of `rounds` turns."""
    for _, fn, _ in cases:
        for _ in range(200):
            fn()
    times = [[] for _ in cases]
    for _ in range(rounds):
        for i, (_, fn, _) in enumerate(cases):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            times[i].append((time.perf_counter() - t0) / calls * 1e6)
    return [sorted(t)[len(t) // 2] for t in times]


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


parser = argparse.ArgumentParser()
parser.add_argument("library")
parser.add_argument("--before")
parser.add_argument("--library-before")
options = parser.parse_args()
mod = weft.load(options.library)
before = None
if options.before:
    sys.path.insert(0, options.before)
    import weft_before
    before = weft_before.load(options.library)
mod_before = weft.load(options.library_before) if options.library_before else None
print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, flush=True)

# The driver's calls that a library call makes, through ctypes (each with ctypes' own ~0.2 us).
cuda = ctypes.CDLL("libcuda.so.1")
context = ctypes.c_void_p()
address = ctypes.c_uint64()
torch.empty(1, device="cuda")
cuda.cuCtxGetCurrent(ctypes.byref(context))


def alloc_free():
    cuda.cuMemAllocAsync(ctypes.byref(address), ctypes.c_size_t(4 << 20), None)
    cuda.cuMemFreeAsync(address, None)


rows = []
for shape in [(256, 256), (1024, 1024)]:
    x = torch.randn(*shape, device="cuda")
    b = torch.randn(shape[1], device="cuda")
    f = mod.scale_add
    e = f._export(["f32", "f32"], [2, 1])
    packed = array.array("q", [x.data_ptr(), 2, 15, 2, shape[0], shape[1], b.data_ptr(), 2, 15, 1, shape[1]])
    results = array.array("q", bytes(8))
    stream = torch._C._cuda_getCurrentRawStream(0)
    call, export, a, r = e.library.call, e.address, packed.buffer_info()[0], results.buffer_info()[0]
    from_dlpack = torch._C._from_dlpack

    def raw_dlpack():
        call(export, a, stream, lib.RESULTS_DEVICE, r)
        return from_dlpack(_capsule_new(results[0], _DLTENSOR, None))

    def raw_release():
        call(export, a, stream, lib.RESULTS_DEVICE, r)
        lib.release(results[0])

    def raw_shapes():
        call(export, a, stream, lib.RESULTS_SHAPES, r)
        lib.release(results[0])

    def reads():  # what a call must read of its arguments
        return (x.dtype, x.shape, x.get_device(), x.is_contiguous(), x.data_ptr(),
                b.dtype, b.shape, b.get_device(), b.is_contiguous(), b.data_ptr())

    cases = [("weft mod.scale_add(x, b)", lambda: mod.scale_add(x, b), True),
             ("weft f(x, b), f = mod.scale_add", lambda: f(x, b), True)]
    if before is not None:
        f_before = before.scale_add
        cases.append(("weft f(x, b), the package before", lambda: f_before(x, b), True))
    if mod_before is not None:
        cases.append(("weft mod.scale_add(x, b), the runtime before", lambda: mod_before.scale_add(x, b), True))
    cases += [
        ("weft op (torch.library)", lambda: f.op(x, b), True),
        ("  library call + DLPack (no Python args)", raw_dlpack, True),
        ("  library call + ctypes release", raw_release, False),
        ("  library call, shapes only (no GPU work)", raw_shapes, False),
        ("  an empty ctypes call (weft_last_error)", e.library.last_error, False),
        ("  the tensor reads a call needs (2 args)", reads, False),
        ("  the plan's key and lookup (2 args)", lambda: f._plans.get(
            tuple([(t.dtype, t.shape, t.get_device(), t.is_contiguous()) for t in (x, b)])), False),
        ("  torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0), False),
        ("  PyCapsule_New through ctypes", lambda: _capsule_new(16, _DLTENSOR, None), False),
        ("  weft_library_call refused at once (5 ctypes arguments)", lambda: call(None, a, stream, 0, r), False),
        ("  driver: cuCtxGetCurrent (ctypes)", lambda: cuda.cuCtxGetCurrent(ctypes.byref(context)), False),
        ("  driver: cuCtxSetCurrent (ctypes)", lambda: cuda.cuCtxSetCurrent(context), False),
        ("  driver: cuMemAllocAsync + cuMemFreeAsync 4 MiB (ctypes)", alloc_free, False),
        ("  torch.empty_like(x) (caching allocator)", lambda: torch.empty_like(x), False),
        ("triton scale_add launch", lambda: triton_scale_add(x, b), True),
        ("torch x * 2 + b (2 kernels)", lambda: x * 2.0 + b, True),
        ("torch.add(x, b) (1 kernel)", lambda: torch.add(x, b), True),
    ]
    hosts = per_call_us(cases)
    for (name, fn, on_gpu), host in zip(cases, hosts):
        gpu = kernel_us(fn) if on_gpu else 0.0
        rows.append(("%dx%d" % shape, name, host, gpu))

table = ["| shape | call | us/call | kernels us | over the kernels us |", "|---|---|---|---|---|"]
for shape, name, host, gpu in rows:
    table.append("| %s | %s | %.2f | %s | %s |" % (shape, name.strip(), host, "%.2f" % gpu if gpu else "",
                                                  "%.2f" % (host - gpu) if gpu else ""))
text = "\n".join([torch.cuda.get_device_name(), ""] + table)
print(text, flush=True)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "overhead.md"), "w") as out:
        out.write(text + "\n")
