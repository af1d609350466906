"""Calling an exported function: PyTorch CUDA tensors (zero copy), NumPy arrays on the GPU or the
CPU interpreter (docs/python.md).

A call on CUDA tensors is a launch, and its host time is the caller's launch latency, so that path is
written for it (docs/python.md, "The cost of a call"):

1. Each argument is read once for a key: its dtype, shape, device index and contiguity
   (`_key`). A Function keeps a *plan* per key (`_plan`): the export for those dtypes and ranks and
   the call's packed arguments (library.h's int64 layout) with the data addresses left blank.
2. A call whose key has a plan copies the plan's buffer, writes each argument's `data_ptr()` in,
   and calls the library on PyTorch's current stream; the library runs every check of the
   parameters' types and `where` facts at each call, so a plan caches packing, never a verdict.
3. Any other call (a first call, a non-contiguous tensor, a tensor on another GPU, NumPy arrays)
   takes the general path, which checks the arguments in Python, makes the plan and runs it.

Everything that packs arguments or reads results for the library lives here: _torch.py's fake
implementation uses `call_export` and `result_shape` too.
"""

import array
import ctypes
import os
import subprocess
import sys
import tempfile

from . import _library as lib

_DLTENSOR = b"dltensor"  # the capsule's name: kept alive here, since the capsule keeps the pointer
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

_NUMPY_NAMES = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f32",
                "float64": "f64"}
_WEFT_TO_NUMPY = {v: k for k, v in _NUMPY_NAMES.items()}
_TORCH_NAMES = dict(_NUMPY_NAMES, bfloat16="bf16", float8_e4m3fn="f8e4m3", float8_e5m2="f8e5m2")

_torch_dtypes = (None, None)  # (the torch module, torch.dtype -> weft's name), made on first use

# The GPU the libraries run on (the runtime reads the same variable: runtime/src/runtime.cpp).
_GPU_TEXT = os.environ.get("WEFT_DEVICE") or "0"
GPU_INDEX = int(_GPU_TEXT) if _GPU_TEXT.isdigit() else 0

_PLANS_KEPT = 256  # plans a Function keeps (a new key past that starts the cache afresh)


def torch_dtypes(torch):
    """torch.dtype -> weft's dtype name, for the dtypes both have."""
    global _torch_dtypes
    if _torch_dtypes[0] is not torch:
        table = {}
        for torch_name, weft_name in _TORCH_NAMES.items():
            dtype = getattr(torch, torch_name, None)
            if dtype is not None:
                table[dtype] = weft_name
        _torch_dtypes = (torch, table)
    return _torch_dtypes[1]


def torch_dtype(torch, weft_name):
    for dtype, name in torch_dtypes(torch).items():
        if name == weft_name:
            return dtype
    raise TypeError("PyTorch has no dtype for weft's %s" % weft_name)


# ---- the library's call, packed (library.h): one place for every path ----

def pack(arguments):
    """library.h's int64 values for `arguments`: (address, where, weft dtype name, shape) each."""
    values = []
    for address, where, dtype, shape in arguments:
        values += (address, where, lib.DTYPE_CODE[dtype], len(shape))
        values += shape
    return values


def call_export(e, values, stream, where):
    """Calls export `e` on packed `values`; the results' DLManagedTensor addresses, which the caller
    releases (lib.release) or hands to DLPack. Raises ShapeError or WeftError for a failure."""
    packed = array.array("q", values)
    results = array.array("q", bytes(8 * max(len(e.result_dtypes), 1)))
    status = e.library.call(e.address, packed.buffer_info()[0] if values else None, stream, where,
                            results.buffer_info()[0])
    if status != lib.OK:
        raise _error(status, e.library.error())
    return list(results[:len(e.result_dtypes)])


def result_shape(address):
    dl = lib.managed(address).dl_tensor
    return tuple(dl.shape[i] for i in range(dl.ndim))


def _key(args):
    """What a plan depends on, per argument: dtype, shape, device index (-1: the CPU), contiguity.
    Raises AttributeError for anything that is not a tensor (a NumPy array has no get_device)."""
    return tuple([(x.dtype, x.shape, x.get_device(), x.is_contiguous()) for x in args])


# A plan's code, written out for its key (as namedtuple and dataclasses write theirs): with the
# offsets and sizes as constants it takes about half the time of a loop over them (0.49 against 0.89
# us with the library call stubbed, on a CPU), and with the key it is a call's cost in Python
# (docs/python.md, "The cost of a call").
_PLAN_CODE = """
def plan({params}):
    buffer = template[:]
{addresses}
    address = buffer.buffer_info()[0]
    status = call(export, address, stream({gpu}), 0, address + {results_at})  # 0: WEFT_RESULTS_DEVICE
    if status:
        raise error(status, library.error())
    return {results}
"""


def _plan(e, dtypes, shapes, torch):
    """A call of export `e` on CUDA tensors of these dtypes and shapes: a function of the tensors that
    copies the packed arguments (library.h's int64 layout, data addresses blank, then one slot per
    result, which the library writes), writes each tensor's address in, calls the library on
    PyTorch's current stream and returns the results as tensors through DLPack."""
    values = pack((0, lib.DEVICE_GPU, dtype, shape) for dtype, shape in zip(dtypes, shapes))
    count = len(e.result_dtypes)
    first = len(values)
    params = ["x%d" % i for i in range(len(shapes))]
    addresses, at = [], 0
    for param, shape in zip(params, shapes):
        addresses.append("    buffer[%d] = %s.data_ptr()" % (at, param))
        at += 4 + len(shape)
    if count == 1:
        results = "from_dlpack(capsule(buffer[%d], name, None))" % first
    else:
        results = "tensors(from_dlpack, buffer[%d:%d])" % (first, first + count)
    code = _PLAN_CODE.format(params=", ".join(params), addresses="\n".join(addresses) or "    pass",
                             gpu=GPU_INDEX, results_at=8 * first, results=results)
    namespace = {
        "template": array.array("q", values + [0] * max(count, 1)),
        "call": e.library.call, "export": e.address, "library": e.library, "error": _error,
        "stream": torch._C._cuda_getCurrentRawStream,
        # torch.utils.dlpack.from_dlpack of a capsule is this after a few checks.
        "from_dlpack": getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack,
        "capsule": _capsule_new, "name": _DLTENSOR, "tensors": _tensors,
    }
    exec(compile(code, "<weft plan of %s>" % e.signature, "exec"), namespace)
    return namespace["plan"]


def _tensors(from_dlpack, addresses):
    """Several results as tensors; those not taken when one fails are released."""
    outs = []
    try:
        for address in addresses:
            outs.append(from_dlpack(_capsule_new(address, _DLTENSOR, None)))
    except BaseException:
        for address in addresses[len(outs) + 1:]:
            lib.release(address)
        raise
    return tuple(outs)


class Function:
    """An exported function of a Module: call it on tensors."""

    def __init__(self, module, name):
        self._module = module
        self.__name__ = name
        self._exports = {}  # (dtypes, ranks) -> Export
        self._plans = {}  # _key(args) -> a plan (_plan): CUDA tensors' fast path
        self._op = None

    def __repr__(self):
        return "<weft function %s of %s>" % (self.__name__, self._module.library.path)

    def signatures(self):
        return [e.signature for l in self._module._libraries for e in l.exports if e.name == self.__name__]

    def __call__(self, *args):
        try:  # _key(args), written out: this is the call's fast path
            plan = self._plans.get(tuple([(x.dtype, x.shape, x.get_device(), x.is_contiguous()) for x in args]))
        except (AttributeError, TypeError):  # not PyTorch tensors
            return self._call_general(args)
        if plan is None:
            return self._call_general(args)
        return plan(*args)

    def _export(self, dtypes, ranks):
        key = (tuple(dtypes), tuple(ranks))
        e = self._exports.get(key)
        if e is None:
            e = self._module._find(self.__name__, list(dtypes), list(ranks))
            self._exports[key] = e
        return e

    def _call_general(self, args):
        torch = sys.modules.get("torch")
        if torch is not None and args and isinstance(args[0], torch.Tensor) and args[0].is_cuda:
            return self._call_cuda(torch, args)
        return self._call_host(torch, args)

    # ---- PyTorch CUDA tensors: zero copy, PyTorch's current stream, results through DLPack ----

    def _call_cuda(self, torch, args):
        """Checks the arguments, makes the plan of their key and runs it."""
        table = torch_dtypes(torch)
        dense = []  # contiguous copies made here live until the call returns
        for i, x in enumerate(args):
            if not isinstance(x, torch.Tensor) or not x.is_cuda:
                raise TypeError("`%s`: argument %d is not a CUDA tensor, but argument 0 is: pass all of them on the GPU"
                                % (self.__name__, i))
            if x.get_device() != GPU_INDEX:
                raise TypeError("`%s`: argument %d is on cuda:%d, but weft runs on cuda:%d (WEFT_DEVICE)"
                                % (self.__name__, i, x.get_device(), GPU_INDEX))
            if x.dtype not in table:
                raise TypeError("`%s`: argument %d is %s, which weft has no dtype for" % (self.__name__, i, x.dtype))
            dense.append(x if x.is_contiguous() else x.contiguous())  # PyTorch copies a strided one
        dtypes = [table[x.dtype] for x in dense]
        shapes = [tuple(x.shape) for x in dense]
        e = self._export(dtypes, [len(s) for s in shapes])
        key = _key(dense)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            plan = self._plans[key] = _plan(e, dtypes, shapes, torch)
        return plan(*dense)

    # ---- NumPy arrays (and CPU tensors): the GPU when usable, else the interpreter ----

    def _call_host(self, torch, args):
        import numpy as np
        from_torch = torch is not None and any(isinstance(a, torch.Tensor) for a in args)
        arrays = []
        for i, a in enumerate(args):
            if torch is not None and isinstance(a, torch.Tensor):
                a = a.detach().cpu().numpy()
            a = np.ascontiguousarray(a)
            if a.dtype.name not in _NUMPY_NAMES:
                raise TypeError("`%s`: argument %d is a NumPy array of %s, which weft has no dtype for"
                                % (self.__name__, i, a.dtype))
            arrays.append(a)
        m = self._module
        library = m.library
        use_gpu = m._device != "cpu" and library.gpu_usable()
        if m._device == "gpu" and not use_gpu:
            raise WeftError("`%s`: no GPU to run on (device='gpu'): %s" % (self.__name__, library.gpu_reason))
        outs = self._on_gpu(arrays) if use_gpu else self._on_interpreter(arrays)
        if from_torch:
            outs = [torch.from_numpy(o) for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _on_gpu(self, arrays):
        import numpy as np
        dtypes = [_NUMPY_NAMES[a.dtype.name] for a in arrays]
        e = self._export(dtypes, [a.ndim for a in arrays])
        values = pack((a.ctypes.data, lib.DEVICE_HOST, d, a.shape) for a, d in zip(arrays, dtypes))
        results = call_export(e, values, None, lib.RESULTS_HOST)
        try:
            return [_host_array(np, lib.managed(r).dl_tensor.data, result_shape(r), dtype)
                    for r, dtype in zip(results, e.result_dtypes)]
        finally:
            for r in results:
                lib.release(r)

    def _on_interpreter(self, arrays):
        import numpy as np
        m = self._module
        from . import _weft_binary
        weft = _weft_binary(m._weft)
        source = m._source or m.library.source_path
        if not source or not os.path.exists(source):
            raise WeftError("`%s`: no GPU, and the library's source `%s` is not here for the interpreter"
                            % (self.__name__, source))
        with tempfile.TemporaryDirectory(prefix="weft-call-") as d:
            files = []
            for i, a in enumerate(arrays):
                files.append(os.path.join(d, "arg%d.npy" % i))
                np.save(files[-1], a)
            out = os.path.join(d, "out")
            os.mkdir(out)
            done = subprocess.run([weft, "call", source, self.__name__] + files + ["--out", out, "--color=never"],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                message = done.stderr.strip()
                if message.startswith("weft: error: "):
                    message = message[len("weft: error: "):]
                shape = any(word in message for word in _SHAPE_WORDS)
                raise (ShapeError if shape else WeftError)(message)
            outs = []
            while os.path.exists(os.path.join(out, "%d.npy" % len(outs))):
                outs.append(np.load(os.path.join(out, "%d.npy" % len(outs))))
            return outs

    # ---- torch.library ----

    @property
    def op(self):
        """This function as a PyTorch custom op (torch.library): callable like the function, and
        traceable by torch.compile, whose fake tensors get their shapes from the library's checks."""
        if self._op is None:
            from ._torch import make_op
            self._op = make_op(self)
        return self._op


def _host_array(np, address, shape, dtype):
    """A NumPy copy of a result in host memory (bf16 widened to f32 exactly: NumPy has no bf16)."""
    if dtype == "bf16":
        bits = _host_array(np, address, shape, "u16")
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if dtype not in _WEFT_TO_NUMPY:
        raise TypeError("a result of %s, which NumPy has no dtype for" % dtype)
    out = np.empty(shape, dtype=_WEFT_TO_NUMPY[dtype])
    if out.nbytes:
        ctypes.memmove(out.ctypes.data, address, out.nbytes)
    return out


from . import WeftError, ShapeError, _error, _SHAPE_WORDS  # noqa: E402
