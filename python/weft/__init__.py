"""weft from Python: call compiled weft functions on PyTorch and NumPy tensors (docs/python.md).

    import torch, weft
    mod = weft.compile("model.weft")         # weft build --shared, cached by content
    y = mod.rmsnorm(x, g)                     # CUDA tensors: zero copy, on the current stream

`weft.compile` builds FILE's functions into a shared library (`weft build --shared`) kept in a cache
keyed by the file's contents; `weft.load` opens a library built before. A function is called with

- PyTorch CUDA tensors: their memory is passed as it is and the kernels run on PyTorch's current
  stream; the results are tensors PyTorch owns through DLPack, holding the memory the kernels wrote.
- NumPy arrays (or CPU tensors): on the GPU when one is usable (copied there and back), else on
  the CPU interpreter (`weft call`, which needs the `weft` command); results are NumPy arrays
  (CPU tensors for CPU tensors).

A polymorphic function is instantiated at each call's dtypes and ranks (`weft build --shared
--instance`), built once per instance and cached. An argument that its parameter's type or a
`where` fact refuses raises `weft.ShapeError`, naming the parameter and the fact.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from . import _library as lib

__all__ = ["compile", "load", "Module", "Function", "WeftError", "ShapeError"]


class WeftError(RuntimeError):
    """A failure of weft: building a library, a kernel, the GPU."""


class ShapeError(WeftError, ValueError):
    """An argument that its parameter's type (dtype, rank, dims) or a `where` fact refuses."""


def _weft_binary(weft=None):
    path = weft or os.environ.get("WEFT") or shutil.which("weft")
    if not path:
        raise WeftError("cannot find the `weft` command: put it on PATH, set WEFT=/path/to/weft, or pass weft=")
    return path


def _cache_dir(cache_dir=None):
    path = cache_dir or os.environ.get("WEFT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weft")
    os.makedirs(path, exist_ok=True)
    return path


def _default_target():
    """sm_90a on a Hopper GPU (or without a GPU: the GPUs weft is tuned for), sm_80 on another."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.get_device_capability() != (9, 0):
                return "sm_80"
        except Exception:  # a broken CUDA set-up: the library's own probe says why later
            pass
    return "sm_90a"


def _run_weft(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise WeftError("`%s` failed:\n%s" % (" ".join(command), done.stderr.strip()))
    return done


_SHAPE_WORDS = ("parameter `", "run-time check failed", "needs `where", "cannot take its inputs")


def _error(status, message):
    return (ShapeError if status == lib.ERROR_SHAPE else WeftError)(message)


class Module:
    """The functions of a weft file, as a compiled library (and the instances built for calls)."""

    def __init__(self, library, source=None, weft=None, target="sm_90a", cache_dir=None, device="auto"):
        if device not in ("auto", "cpu", "gpu"):
            raise ValueError("device is 'auto', 'cpu' or 'gpu', not %r" % (device,))
        self._libraries = [library]
        self._source = source  # the .weft file (weft.compile), or None (weft.load)
        self._weft = weft
        self._target = target
        self._cache_dir = cache_dir
        self._device = device
        self._lock = threading.Lock()
        self._functions = {}

    @property
    def library(self):
        """The library `weft build --shared` made of the file (without instances)."""
        return self._libraries[0]

    def exports(self):
        """Every export of the loaded libraries: (name, signature)."""
        return [(e.name, e.signature) for l in self._libraries for e in l.exports]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        functions = self.__dict__["_functions"]
        if name not in functions:
            if not any(e.name == name for l in self._libraries for e in l.exports) and not self._can_instantiate():
                raise AttributeError("weft module %s has no exported function `%s` (exports: %s)" % (
                    self.library.path, name, ", ".join(sorted({e.name for e in self.library.exports})) or "none"))
            functions[name] = Function(self, name)
        if not hasattr(Module, name):
            # In the instance's dict, `mod.NAME` no longer comes here (a call's cost: docs/python.md).
            self.__dict__[name] = functions[name]
        return functions[name]

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | {e.name for l in self._libraries for e in l.exports})

    def _can_instantiate(self):
        return self._source is not None

    # ---- finding the export for a call ----

    def _find(self, name, dtypes, ranks):
        """The export of `name` for arguments of these dtypes and ranks, built if need be."""
        with self._lock:
            candidates = [e for l in self._libraries for e in l.exports if e.name == name]
            for e in candidates:
                if e.param_dtypes == dtypes and e.param_ranks == ranks:
                    return e
            # A monomorphic function (exported as it is), or a library without its source: its own
            # checks say what is wrong with the arguments.
            monomorphic = any(e.name == name for e in self.library.exports)
            if candidates and (monomorphic or self._source is None):
                return candidates[0]
            if self._source is None:
                raise WeftError("`%s` has no instance for %s in %s, which was loaded without its source" % (
                    name, _instance_text(name, dtypes, ranks), self.library.path))
            library = self._build_instance(name, dtypes, ranks)
            self._libraries.append(library)
            for e in library.exports:
                if e.name == name and e.param_dtypes == dtypes and e.param_ranks == ranks:
                    return e
            raise WeftError("the instance %s was built but does not export it" % _instance_text(name, dtypes, ranks))

    def _build_instance(self, name, dtypes, ranks):
        instance = _instance_text(name, dtypes, ranks)
        return _build(self._source, self._weft, self._target, self._cache_dir, [instance])


def _instance_text(name, dtypes, ranks):
    return name + " " + " ".join("%s[%s]" % (d, ", ".join("_" * r)) for d, r in zip(dtypes, ranks))


def _build(source, weft, target, cache_dir, instances):
    weft = _weft_binary(weft)
    with open(source, "rb") as f:
        text = f.read()
    key = hashlib.sha256()
    for part in (text, os.path.abspath(source).encode(), target.encode(), repr(instances).encode(),
                 os.path.realpath(weft).encode(), str(os.stat(weft).st_mtime_ns).encode()):
        key.update(part)
        key.update(b"\0")
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(source))[0])
    path = os.path.join(_cache_dir(cache_dir), "lib%s-%s.so" % (stem, key.hexdigest()[:16]))
    if not os.path.exists(path):
        fd, partial = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
        os.close(fd)
        command = [weft, "build", "--shared", source, "-o", partial, "--target", target]
        for instance in instances:
            command += ["--instance", instance]
        if instances:
            command.append("--only-instances")
        try:
            _run_weft(command)
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    return lib.Library(path)


def compile(path, *, target=None, weft=None, cache_dir=None, device="auto"):
    """Builds the functions of the weft file `path` into a shared library (cached by content) and
    loads it. `target`: sm_90a or sm_80 (by default the GPU's, as torch sees it); `weft`: the
    `weft` command (default: $WEFT, then PATH); `device`: 'auto' (GPU when usable), 'cpu' (always
    the interpreter for NumPy arrays) or 'gpu' (refuse the interpreter)."""
    target = target or _default_target()
    library = _build(path, weft, target, cache_dir, [])
    return Module(library, source=os.path.abspath(path), weft=weft, target=target, cache_dir=cache_dir,
                  device=device)


def load(path, *, weft=None, device="auto"):
    """Opens a library `weft build --shared` made. Its polymorphic functions are callable at the
    instances it was built with; NumPy arrays without a GPU need the `weft` command and the
    library's source file (recorded in it)."""
    library = lib.Library(path)
    return Module(library, source=None, weft=weft, target=library.exports[0].target if library.exports else "sm_90a",
                  device=device)


from ._call import Function  # noqa: E402  (Function needs the names above)
