"""Calling an exported function: PyTorch CUDA tensors (zero copy), NumPy arrays on the GPU or the
CPU interpreter (docs/python.md)."""

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

_torch_dtypes = None  # torch.dtype -> (weft name, weft code), made on first use


def _torch_table(torch):
    global _torch_dtypes
    if _torch_dtypes is None:
        pairs = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                 "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
                 "float32": "f32", "float64": "f64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}
        table = {}
        for torch_name, weft_name in pairs.items():
            dtype = getattr(torch, torch_name, None)
            if dtype is not None:
                table[dtype] = (weft_name, lib.DTYPE_CODE[weft_name])
        _torch_dtypes = table
    return _torch_dtypes


def torch_dtype(torch, weft_name):
    for dtype, (name, _) in _torch_table(torch).items():
        if name == weft_name:
            return dtype
    raise TypeError("PyTorch has no dtype for weft's %s" % weft_name)


class Function:
    """An exported function of a Module: call it on tensors."""

    def __init__(self, module, name):
        self._module = module
        self.__name__ = name
        self._exports = {}  # (dtypes, ranks) -> Export: the call's fast path
        self._op = None

    def __repr__(self):
        return "<weft function %s of %s>" % (self.__name__, self._module.library.path)

    def signatures(self):
        return [e.signature for l in self._module._libraries for e in l.exports if e.name == self.__name__]

    def __call__(self, *args):
        torch = sys.modules.get("torch")
        if torch is not None and args and isinstance(args[0], torch.Tensor) and args[0].is_cuda:
            return self._call_cuda(torch, args)
        return self._call_host(torch, args)

    def _export(self, dtypes, ranks):
        key = (tuple(dtypes), tuple(ranks))
        e = self._exports.get(key)
        if e is None:
            e = self._module._find(self.__name__, dtypes, ranks)
            self._exports[key] = e
        return e

    # ---- PyTorch CUDA tensors: zero copy, PyTorch's current stream, results through DLPack ----

    def _call_cuda(self, torch, args):
        table = _torch_table(torch)
        values = []
        dtypes = []
        ranks = []
        keep = []  # contiguous copies made here live until the call returns
        for i, x in enumerate(args):
            if not isinstance(x, torch.Tensor) or not x.is_cuda:
                raise TypeError("`%s`: argument %d is not a CUDA tensor, but argument 0 is: pass all of them on the GPU"
                                % (self.__name__, i))
            if not x.is_contiguous():
                x = x.contiguous()  # weft takes dense C-order tensors: PyTorch copies this one
                keep.append(x)
            entry = table.get(x.dtype)
            if entry is None:
                raise TypeError("`%s`: argument %d is %s, which weft has no dtype for" % (self.__name__, i, x.dtype))
            shape = x.shape
            values += (x.data_ptr(), 2, entry[1], len(shape))
            values += shape
            dtypes.append(entry[0])
            ranks.append(len(shape))
        e = self._export(dtypes, ranks)
        stream = torch._C._cuda_getCurrentRawStream(args[0].get_device())
        # array.array, not ctypes arrays: a call's host time is the caller's launch latency, and
        # these cost a tenth as much to make (the buffers live until the call returns).
        packed = array.array("q", values)
        count = len(e.result_dtypes)
        results = array.array("Q", bytes(8 * max(count, 1)))
        status = e.library.call(e.address, packed.buffer_info()[0], stream, lib.RESULTS_DEVICE,
                                results.buffer_info()[0])
        if status != lib.OK:
            raise _error(status, e.library.error())
        # torch.utils.dlpack.from_dlpack of a capsule is this call after a few checks.
        from_dlpack = getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack
        if count == 1:
            return from_dlpack(_capsule_new(results[0], _DLTENSOR, None))
        return tuple(from_dlpack(_capsule_new(results[r], _DLTENSOR, None)) for r in range(count))

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
        ranks = [a.ndim for a in arrays]
        e = self._export(dtypes, ranks)
        values = []
        for a in arrays:
            values += (a.ctypes.data, 1, lib.DTYPE_CODE[_NUMPY_NAMES[a.dtype.name]], a.ndim)
            values += a.shape
        results = (ctypes.c_void_p * max(len(e.result_dtypes), 1))()
        status = e.library.call(e.address, (ctypes.c_int64 * max(len(values), 1))(*values), None, lib.RESULTS_HOST,
                                results)
        if status != lib.OK:
            raise _error(status, e.library.error())
        outs = []
        try:
            for r, dtype in enumerate(e.result_dtypes):
                dl = lib.managed(results[r]).dl_tensor
                shape = tuple(dl.shape[i] for i in range(dl.ndim))
                outs.append(_host_array(np, dl.data, shape, dtype))
        finally:
            for r in range(len(e.result_dtypes)):
                lib.release(results[r])
        return outs

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
