"""ctypes over the C ABI of a library that `weft build --shared` makes (runtime/include/weft/library.h).

Pure Python: ctypes is in the standard library, and the ABI is a handful of functions and plain
structs, so a binding library (pybind11, cffi) would add a build step and a dependency for nothing.
"""

import ctypes
import os

# weft_dtype (compiler/base/dtypes.def's order) by name, and back.
DTYPES = ["bool", "i4", "i8", "i16", "i32", "i64", "u4", "u8", "u16", "u32", "u64",
          "f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"]
DTYPE_CODE = {name: code for code, name in enumerate(DTYPES)}

# weft_status
OK = 0
ERROR_SHAPE = 10

# weft_library_results
RESULTS_DEVICE = 0
RESULTS_HOST = 1
RESULTS_SHAPES = 2

DEVICE_HOST = 1
DEVICE_GPU = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]


class ExportStruct(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("signature", ctypes.c_char_p), ("target", ctypes.c_char_p),
                ("uses_gpu", ctypes.c_int32), ("param_count", ctypes.c_int32),
                ("param_names", ctypes.POINTER(ctypes.c_char_p)), ("param_dtypes", ctypes.POINTER(ctypes.c_int32)),
                ("param_ranks", ctypes.POINTER(ctypes.c_int32)), ("param_types", ctypes.POINTER(ctypes.c_char_p)),
                ("result_count", ctypes.c_int32), ("result_dtypes", ctypes.POINTER(ctypes.c_int32)),
                ("body", ctypes.c_void_p)]


class Export:
    """One exported function (or instance) of a library, as its table describes it."""

    def __init__(self, library, struct, address):
        self.library = library
        self.address = address  # the table entry's address, what weft_library_call takes
        self.name = struct.name.decode()
        self.signature = struct.signature.decode()
        self.target = struct.target.decode()
        self.uses_gpu = bool(struct.uses_gpu)
        n = struct.param_count
        self.param_names = [struct.param_names[i].decode() for i in range(n)]
        self.param_dtypes = [DTYPES[struct.param_dtypes[i]] for i in range(n)]
        self.param_ranks = [struct.param_ranks[i] for i in range(n)]
        self.param_types = [struct.param_types[i].decode() for i in range(n)]
        self.result_dtypes = [DTYPES[struct.result_dtypes[i]] for i in range(struct.result_count)]

    def __repr__(self):
        return "<weft export %s>" % self.signature


class Library:
    """A loaded `weft build --shared` library: its exports and the calls into it."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.dll = ctypes.CDLL(self.path)
        count = ctypes.c_int32.in_dll(self.dll, "weft_library_export_count").value
        table = (ExportStruct * max(count, 1)).in_dll(self.dll, "weft_library_exports")
        base = ctypes.addressof(table)
        size = ctypes.sizeof(ExportStruct)
        self.exports = [Export(self, table[i], base + i * size) for i in range(count)]
        self.source_path = ctypes.c_char_p.in_dll(self.dll, "weft_library_source_path").value.decode()
        self.source = ctypes.c_char_p.in_dll(self.dll, "weft_library_source").value.decode()
        self.call = self.dll.weft_library_call
        self.call.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                              ctypes.c_void_p]
        self.call.restype = ctypes.c_int
        self.last_error = self.dll.weft_last_error
        self.last_error.restype = ctypes.c_char_p
        self.last_error.argtypes = []
        self.gpu_usable_fn = self.dll.weft_library_gpu_usable
        self.gpu_usable_fn.argtypes = [ctypes.c_void_p]
        self.gpu_usable_fn.restype = ctypes.c_int32
        self._gpu = None

    def gpu_usable(self):
        """Whether this process can run the library's kernels (a driver, a GPU the target runs on)."""
        if self._gpu is None:
            entry = self.exports[0].address if self.exports else None
            self._gpu = bool(self.gpu_usable_fn(entry))
            self.gpu_reason = "" if self._gpu else self.last_error().decode()
        return self._gpu

    def error(self):
        return self.last_error().decode()


def managed(address):
    """The DLManagedTensor at `address`."""
    return DLManagedTensor.from_address(address)


def release(address):
    """Calls a result's deleter (DLPack's rule for a tensor nobody took)."""
    if address:
        m = DLManagedTensor.from_address(address)
        m.deleter(ctypes.cast(address, ctypes.POINTER(DLManagedTensor)))
