"""A stand-in for the few parts of PyTorch that the package's CUDA path reads (python/weft/_call.py),
so that CI, which has no PyTorch and no GPU, runs that path on the runtime's fake driver: its "GPU
memory" is host memory, so a fake CUDA tensor is a NumPy array that says it is on cuda:N. Results
come back through DLPack capsules as the real `torch._C._from_dlpack` takes them, and are released
through their deleters when the tensor dies. test_weft.py installs it as `torch` for its tests only.
"""

import ctypes
import types

import numpy as np

from weft import _library as lib


class dtype:  # noqa: N801  (torch's name)
    def __init__(self, name, numpy_name):
        self.name = name
        self.numpy = np.dtype(numpy_name)

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", "float32")
float64 = dtype("float64", "float64")
int32 = dtype("int32", "int32")
complex64 = dtype("complex64", "complex64")  # weft has no complex dtype
_BY_NUMPY = {d.numpy: d for d in (float32, float64, int32, complex64)}


class Size(tuple):
    pass


class Tensor:
    def __init__(self, array, device=0, managed=None):
        self._array = array
        self._device = device  # -1: the CPU
        self._managed = managed  # a DLManagedTensor's address, released when this dies
        self.dtype = _BY_NUMPY[array.dtype]

    def __del__(self):
        if self._managed:
            lib.release(self._managed)

    @property
    def shape(self):
        return Size(self._array.shape)

    @property
    def is_cuda(self):
        return self._device >= 0

    def get_device(self):
        return self._device

    def is_contiguous(self):
        return self._array.flags.c_contiguous

    def contiguous(self):
        return self if self.is_contiguous() else Tensor(np.ascontiguousarray(self._array), self._device)

    def data_ptr(self):
        return self._array.ctypes.data

    def t(self):
        return Tensor(self._array.T, self._device)

    def detach(self):
        return self

    def cpu(self):
        return Tensor(self._array, -1)

    def numpy(self):
        return self._array


def tensor(array, device=0):
    """A fake tensor holding `array` (on cuda:`device`, or the CPU for -1)."""
    return Tensor(np.asarray(array), device)


def from_numpy(array):
    return Tensor(array, -1)


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_NUMPY_OF_DL = {(2, 32): np.float32, (2, 64): np.float64, (0, 32): np.int32}


def _from_dlpack(capsule):
    address = _get_pointer(capsule, b"dltensor")
    dl = lib.managed(address).dl_tensor
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    element = np.dtype(_NUMPY_OF_DL[(dl.dtype.code, dl.dtype.bits)])
    count = int(np.prod(shape)) if shape else 1
    if count:
        memory = (ctypes.c_char * (count * element.itemsize)).from_address(dl.data)
        array = np.frombuffer(memory, dtype=element).reshape(shape)
    else:
        array = np.empty(shape, element)
    return Tensor(array, dl.device.device_id if dl.device.device_type == 2 else -1, managed=address)


_C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0, _from_dlpack=_from_dlpack)
