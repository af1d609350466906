"""The .npy round trip of every weft dtype (tests/lit/run/npy_roundtrip.weft).

  npy_dtypes.py write   writes in_DTYPE.npy: a [2, 4] array of DTYPE with its edge values
  npy_dtypes.py check   reads each out_DTYPE.npy that weft saved from it, and prints one line per
                        dtype: its descr as written, and whether np.load gives the same array,
                        bit for bit

bf16, f8e4m3, f8e5m2, i4 and u4 are weft's one-field structured types (docs/npy.md).
"""
import ast
import sys

import numpy as np


def bits(field, storage, values):
    return np.array(values, storage).reshape(2, 4).view([(field, storage)])


def arrays():
    f = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-3]
    return {
        "f32": np.array(f[:7] + [np.finfo(np.float32).smallest_subnormal], np.float32).reshape(2, 4),
        "f64": np.array(f[:7] + [np.finfo(np.float64).max], np.float64).reshape(2, 4),
        "f16": np.array(f[:7] + [65504.0], np.float16).reshape(2, 4),
        # 1, -2, +inf, NaN, the smallest subnormal, -0, the largest finite, 0.25
        "bf16": bits("bf16", "<u2", [0x3F80, 0xC000, 0x7F80, 0x7FC0, 0x0001, 0x8000, 0x7F7F, 0x3E80]),
        # 0, -0, 1, 448 (the largest), NaN, the smallest subnormal, -1, 2
        "f8e4m3": bits("f8e4m3", "|u1", [0x00, 0x80, 0x38, 0x7E, 0x7F, 0x01, 0xB8, 0x40]),
        # 0, -0, 1, 57344 (the largest), +inf, NaN, the smallest subnormal, -1
        "f8e5m2": bits("f8e5m2", "|u1", [0x00, 0x80, 0x3C, 0x7B, 0x7C, 0x7E, 0x01, 0xBC]),
        "i4": bits("i4", "|i1", [-8, -1, 0, 1, 2, 5, 6, 7]),
        "u4": bits("u4", "|u1", [0, 1, 2, 7, 8, 9, 14, 15]),
        "i8": np.array([-128, -1, 0, 1, 2, 100, 126, 127], np.int8).reshape(2, 4),
        "i16": np.array([-32768, -1, 0, 1, 2, 1000, 32766, 32767], np.int16).reshape(2, 4),
        "i32": np.array([-(2**31), -1, 0, 1, 2, 10**9, 2**31 - 2, 2**31 - 1], np.int32).reshape(2, 4),
        "i64": np.array([-(2**63), -1, 0, 1, 2, 10**18, 2**63 - 2, 2**63 - 1], np.int64).reshape(2, 4),
        "u8": np.array([0, 1, 2, 100, 127, 128, 254, 255], np.uint8).reshape(2, 4),
        "u16": np.array([0, 1, 2, 1000, 32767, 32768, 65534, 65535], np.uint16).reshape(2, 4),
        "u32": np.array([0, 1, 2, 10**9, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1], np.uint32).reshape(2, 4),
        "u64": np.array([0, 1, 2, 10**18, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1], np.uint64).reshape(2, 4),
        "bool": np.array([True, False, False, True, True, True, False, False]).reshape(2, 4),
    }


def descr(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x93NUMPY\x01\x00", data[:8]
    length = int.from_bytes(data[8:10], "little")
    assert (10 + length) % 64 == 0, "the data should start at a multiple of 64 bytes"
    return ast.literal_eval(data[10 : 10 + length].decode("latin1"))["descr"]


def main():
    if sys.argv[1] == "write":
        for name, a in arrays().items():
            np.save("in_%s.npy" % name, a)
        return
    for name, a in arrays().items():
        b = np.load("out_%s.npy" % name)
        same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        print("%s %s %s" % (name, descr("out_%s.npy" % name), "same" if same else "DIFFERENT"))


main()
