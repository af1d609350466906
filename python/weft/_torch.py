"""A weft function as a PyTorch custom op (torch.library), so that torch.compile can call it inside
a compiled graph (docs/python.md).

The op takes and returns lists of tensors (`weft::NAME(Tensor[] args) -> Tensor[]`), since a
polymorphic function's arity and results are only known per instance. Its real implementations are
the function's own call (_call.py); its fake implementation, which torch.compile traces with, asks
the library for the results' shapes: the call runs the export's checks and size computations
without allocating or launching anything (WEFT_RESULTS_SHAPES), so a shape error shows at trace
time with the same message as at run time.
"""

import hashlib

from . import _library as lib
from ._call import call_export, pack, result_shape, torch_dtype, torch_dtypes

_libraries = {}  # torch.library.Library objects must stay alive


def _real(function, args):
    r = function(*args)
    return list(r) if isinstance(r, tuple) else [r]


def _fake(function, args, torch):
    table = torch_dtypes(torch)
    dtypes = [table[x.dtype] for x in args]
    shapes = [tuple(int(s) for s in x.shape) for x in args]  # symbolic sizes specialized to their values
    e = function._export(dtypes, [len(s) for s in shapes])
    values = pack((0, lib.DEVICE_GPU if x.is_cuda else lib.DEVICE_HOST, d, s) for x, d, s in zip(args, dtypes, shapes))
    device = args[0].device if args else "cpu"
    outs = []
    for r, dtype in zip(call_export(e, values, None, lib.RESULTS_SHAPES), e.result_dtypes):
        shape = result_shape(r)
        lib.release(r)
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
        library.impl(name, lambda args: _real(function, args), "CUDA")
        library.impl(name, lambda args: _real(function, args), "CPU")
        torch.library.register_fake("weft::" + name, lambda args: _fake(function, args, torch), lib=library)
        _libraries[name] = library
    op = getattr(torch.ops.weft, name)

    def call(*args):
        outs = op(list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)

    call.__name__ = function.__name__
    call.op = op
    return call
