"""A weft function as a PyTorch custom op (torch.library), so that torch.compile can call it inside
a compiled graph (docs/python.md).

The op takes and returns lists of tensors (`weft::NAME(Tensor[] args) -> Tensor[]`), since a
polymorphic function's arity and results are only known per instance. Its fake implementation, which
torch.compile traces with, asks the library for the results' shapes: the call runs the export's
checks and size computations without allocating or launching anything (WEFT_RESULTS_SHAPES), so a
shape error shows at trace time with the same message as at run time.
"""

import ctypes
import hashlib

from . import _library as lib

_libraries = {}  # torch.library.Library objects must stay alive


def _results(function, args, torch):
    r = function(*args)
    return list(r) if isinstance(r, tuple) else [r]


def _fake(function, args, torch):
    from ._call import _torch_table, torch_dtype
    from . import _error
    table = _torch_table(torch)
    dtypes, ranks, values = [], [], []
    for x in args:
        name, code = table[x.dtype]
        shape = [int(s) for s in x.shape]
        values += [0, 2 if x.is_cuda else 1, code, len(shape)] + shape
        dtypes.append(name)
        ranks.append(len(shape))
    e = function._export(dtypes, ranks)
    results = (ctypes.c_void_p * max(len(e.result_dtypes), 1))()
    status = e.library.call(e.address, (ctypes.c_int64 * max(len(values), 1))(*values), None, lib.RESULTS_SHAPES,
                            results)
    if status != lib.OK:
        raise _error(status, e.library.error())
    outs = []
    device = args[0].device if args else "cpu"
    for r, dtype in enumerate(e.result_dtypes):
        dl = lib.managed(results[r]).dl_tensor
        shape = [dl.shape[i] for i in range(dl.ndim)]
        lib.release(results[r])
        outs.append(torch.empty(shape, dtype=torch_dtype(torch, dtype), device=device))
    return outs


def make_op(function):
    import torch
    module = function._module
    digest = hashlib.sha256(module.library.path.encode()).hexdigest()[:8]
    name = "%s_%s" % (function.__name__, digest)
    if name not in _libraries:
        library = torch.library.Library("weft", "FRAGMENT")
        library.define("%s(Tensor[] args) -> Tensor[]" % name)
        library.impl(name, lambda args: _results(function, args, torch), "CUDA")
        library.impl(name, lambda args: _results(function, args, torch), "CPU")
        torch.library.register_fake("weft::" + name, lambda args: _fake(function, args, torch), lib=library)
        _libraries[name] = library
    op = getattr(torch.ops.weft, name)

    def call(*args):
        outs = op(list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)

    call.__name__ = function.__name__
    call.op = op
    return call
