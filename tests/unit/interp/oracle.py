#!/usr/bin/env python3
"""Expected results for the interpreter's operations, computed independently of weft's C++ code.

The unit tests (oracle_test.cpp) run this script and check every record it prints. A record is one
line, `OP INPUT... -> EXPECTED`, each tensor written `dtype[d0,d1]=bits,bits,...` with every
element's bit pattern in hex (i4/u4: the nibble). The expected values come from:

1. NumPy for f16, f32, f64 and the integers (its float16 arithmetic computes in f32 and rounds once,
   as weft does), with sequential loops where weft fixes an order NumPy does not (sums, `@`).
2. A reference rounding for bf16 and the f8 formats (and for exact conversions NumPy does not do):
   the sorted list of every finite value of the format, the nearest one found by bisection, a tie
   broken toward the even bit pattern. It shares nothing with runtime/src/numerics.cpp's bit
   arithmetic.
3. The rules of docs/numerics.md written out directly for casts to integers (truncate, clamp, NaN 0).

Exit status 3 and a message on stderr when numpy is missing.
"""
import bisect
import decimal
import math
import random
import sys

try:
    import numpy as np
except ImportError:
    sys.stderr.write("numpy is missing for %s: run `make deps` (Debian's python3-numpy)\n" % sys.executable)
    sys.exit(3)

np.seterr(all="ignore")
rng = random.Random(20240611)
out = sys.stdout


# ---- Formats ---------------------------------------------------------------------------------------

class Format:
    """A binary float format: every finite non-negative value, ascending, with its bit pattern."""

    def __init__(self, exp_bits, man_bits, has_inf, saturate):
        self.exp_bits, self.man_bits, self.has_inf, self.saturate = exp_bits, man_bits, has_inf, saturate
        self.bias = 2 ** (exp_bits - 1) - 1
        self.sign = 1 << (exp_bits + man_bits)
        top = 2 ** exp_bits - 1
        self.keys, self.bits = [], []
        for e in range(2 ** exp_bits):
            for m in range(2 ** man_bits):
                if has_inf and e == top:
                    continue  # infinities and NaNs
                if not has_inf and e == top and m == 2 ** man_bits - 1:
                    continue  # E4M3's only NaN
                value = math.ldexp(m, 1 - self.bias - man_bits) if e == 0 else \
                    math.ldexp(2 ** man_bits + m, e - self.bias - man_bits)
                self.keys.append(value)
                self.bits.append((e << man_bits) | m)
        self.inf_bits = (top << man_bits) if has_inf else None
        self.nan_bits = self.sign - 1
        # The value one quantum above the largest finite one, where an IEEE format's infinity sits.
        self.beyond = self.keys[-1] + (self.keys[-1] - self.keys[-2])

    def decode(self, bits):
        negative = bits & self.sign
        bits &= self.sign - 1
        if bits in self.index:
            v = self.keys[self.index[bits]]
        elif self.has_inf and bits == self.inf_bits:
            v = math.inf
        else:
            v = math.nan
        return -v if negative else v

    @property
    def index(self):
        if not hasattr(self, "_index"):
            self._index = {b: i for i, b in enumerate(self.bits)}
        return self._index

    def encode(self, x):
        """x: a Python float (exact double) or int. Round to nearest, ties to the even pattern."""
        if isinstance(x, float) and math.isnan(x):
            return self.nan_bits
        negative = x < 0 or (isinstance(x, float) and x == 0 and math.copysign(1, x) < 0)
        sign = self.sign if negative else 0
        a = -x if x < 0 else x
        top = self.keys[-1]
        if a > top:
            if self.saturate or not self.has_inf:
                return sign | self.bits[-1]
            mid = (top + self.beyond) / 2  # exact: one more bit than the format has
            return sign | (self.bits[-1] if a < mid else self.inf_bits)  # a tie goes to the even infinity
        i = bisect.bisect_left(self.keys, a)
        if self.keys[i] == a:
            return sign | self.bits[i]
        lo, hi = self.keys[i - 1], self.keys[i]
        mid = (lo + hi) / 2
        if a < mid:
            j = i - 1
        elif a > mid:
            j = i
        else:
            j = i - 1 if self.bits[i - 1] % 2 == 0 else i
        return sign | self.bits[j]


F16 = Format(5, 10, True, False)
BF16 = Format(8, 7, True, False)
E4M3 = Format(4, 3, False, True)
E5M2 = Format(5, 2, True, True)
NARROW = {"f16": F16, "bf16": BF16, "f8e4m3": E4M3, "f8e5m2": E5M2}

INT_BITS = {"i4": 4, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u4": 4, "u8": 8, "u16": 16, "u32": 32,
            "u64": 64, "bool": 8}
FLOATS = ["f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"]


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f64_bits(x):
    return int(np.array([x], dtype=np.float64).view(np.uint64)[0])


def f32_of_bits(b):
    return float(np.array([b], dtype=np.uint32).view(np.float32)[0])


def f64_of_bits(b):
    return float(np.array([b], dtype=np.uint64).view(np.float64)[0])


# ---- Values <-> bits, per dtype ----------------------------------------------------------------

def to_bits(dtype, v):
    """The bit pattern of the Python value v (already representable) in dtype."""
    if dtype == "f32":
        return f32_bits(v)
    if dtype == "f64":
        return f64_bits(v)
    if dtype in NARROW:
        return NARROW[dtype].encode(float(v))
    if dtype == "bool":
        return 1 if v else 0
    return int(v) & ((1 << INT_BITS[dtype]) - 1)


def from_bits(dtype, b):
    if dtype == "f32":
        return f32_of_bits(b)
    if dtype == "f64":
        return f64_of_bits(b)
    if dtype in NARROW:
        return NARROW[dtype].decode(b)
    if dtype == "bool":
        return b != 0
    n = INT_BITS[dtype]
    return b - (1 << n) if dtype.startswith("i") and b >= 1 << (n - 1) else b


def round_to(dtype, x):
    """Python value x (float or int) rounded once to dtype, as bits."""
    if dtype == "f32":
        if isinstance(x, int):
            return f32_bits(np.float32(np.int64(x)) if -2**63 <= x < 2**63 else np.float32(np.uint64(x)))
        return f32_bits(np.float32(x))  # NumPy's f64 -> f32 rounds once
    if dtype == "f64":
        return f64_bits(float(x))
    return NARROW[dtype].encode(x)


def wrap(dtype, v):
    n = INT_BITS[dtype]
    v &= (1 << n) - 1
    return v - (1 << n) if dtype.startswith("i") and v >= 1 << (n - 1) else v


def cast_float_to_int(dtype, x):
    """docs/numerics.md: truncate toward zero, saturate to the range, NaN -> 0; bool: != 0."""
    if dtype == "bool":
        return 1 if x != 0 else 0
    if math.isnan(x):
        return 0
    n = INT_BITS[dtype]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if dtype.startswith("i") else (0, (1 << n) - 1)
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(math.trunc(x), lo), hi)


# ---- Printing ----------------------------------------------------------------------------------

def tensor_text(dtype, shape, bits):
    return "%s[%s]=%s" % (dtype, ",".join(str(d) for d in shape), ",".join("%x" % b for b in bits))


def emit(op, inputs, expected):
    """inputs, expected: (dtype, shape, bits) triples."""
    out.write("%s %s -> %s\n" % (op, " ".join(tensor_text(*t) for t in inputs), tensor_text(*expected)))


# A tensor as (dtype, shape, bits) from a NumPy array of Python-representable values.
def T(dtype, array):
    a = np.asarray(array, dtype=object)
    return (dtype, list(a.shape), [to_bits(dtype, v) for v in a.reshape(-1)])


# Its values as a NumPy array in the dtype's compute type (f32 for floats up to 32 bits).
def values(t):
    dtype, shape, bits = t
    vals = [from_bits(dtype, b) for b in bits]
    if dtype == "f64":
        kind = np.float64
    elif dtype in FLOATS:
        kind = np.float32
    elif dtype == "bool":
        kind = np.bool_
    elif dtype.startswith("u"):
        kind = np.uint64
    else:
        kind = np.int64
    return np.array(vals, dtype=kind).reshape(shape)


def result(dtype, array):
    """A computed array (f32/f64 for floats, int64/uint64/bool otherwise) rounded or wrapped to dtype."""
    a = np.asarray(array)
    flat = a.reshape(-1)
    if dtype == "f16":
        bits = [int(b) for b in flat.astype(np.float32).astype(np.float16).view(np.uint16)]
    elif dtype in NARROW:
        bits = [NARROW[dtype].encode(float(v)) for v in flat]
    elif dtype in ("f32", "f64"):
        bits = [to_bits(dtype, float(v)) for v in flat]
    elif dtype == "bool":
        bits = [1 if v else 0 for v in flat]
    else:
        bits = [to_bits(dtype, wrap(dtype, int(v))) for v in flat]
    return (dtype, list(a.shape), bits)


# ---- Conversions -------------------------------------------------------------------------------

def conversions():
    for name, fmt in NARROW.items():
        width = fmt.exp_bits + fmt.man_bits + 1
        patterns = list(range(2 ** width))
        # Every pattern decodes exactly to f32.
        decoded = [fmt.decode(b) for b in patterns]
        emit("cast:f32", [(name, [len(patterns)], patterns)], ("f32", [len(patterns)], [f32_bits(v) for v in decoded]))

        # From f32: every value, every midpoint (a tie), one f32 ulp either side of it, the overflow
        # region, specials and random patterns.
        xs = []
        keys = fmt.keys + [fmt.beyond]
        for lo, hi in zip(keys, keys[1:]):
            mid = np.float32((lo + hi) / 2)
            xs += [lo, float(mid), float(np.nextafter(mid, np.float32(0))), float(np.nextafter(mid, np.float32(np.inf)))]
        xs += [fmt.beyond, fmt.beyond * 2, 3.0e38, math.inf, math.nan, 0.0, 1e-45, 1e-40, 2.0 ** -126]
        xs += [f32_of_bits(rng.getrandbits(32)) for _ in range(3000)]
        xs = [v for v in xs if abs(v) <= 3.4028234663852886e38 or math.isinf(v) or math.isnan(v)]
        xs += [-v for v in xs]
        emit("cast:" + name, [("f32", [len(xs)], [f32_bits(v) for v in xs])],
             (name, [len(xs)], [fmt.encode(float(np.float32(v))) for v in xs]))

        # From f64: just off each tie by less than an f32 ulp (rounding through f32 would make it a
        # tie and go to even), and random doubles in range.
        ys = []
        for lo, hi in zip(keys, keys[1:]):
            mid = (lo + hi) / 2
            ys += [mid + mid * 2.0 ** -40, mid - mid * 2.0 ** -40]
        ys += [rng.uniform(-1, 1) * 2.0 ** rng.randint(-30, 20) for _ in range(2000)] + [1e300, -1e300, 1e-300]
        emit("cast:" + name, [("f64", [len(ys)], [f64_bits(v) for v in ys])],
             (name, [len(ys)], [fmt.encode(v) for v in ys]))

        # From i64 and u64: once, not through f64 (2^62 + 2^54 + 1 is just above a bf16 tie; through f64
        # it would be the tie itself).
        zs = [0, 1, -1, 3, 7, 17, 255, 448, 449, 465, 479, 65504, 65519, 65520, 65536, -65520,
              2 ** 62 + 2 ** 54 + 1, -(2 ** 62 + 2 ** 54 + 1), 2 ** 63 - 1, -(2 ** 63)]
        zs += [rng.randint(-(2 ** 63), 2 ** 63 - 1) >> rng.randint(0, 62) for _ in range(500)]
        emit("cast:" + name, [("i64", [len(zs)], [z & (2 ** 64 - 1) for z in zs])],
             (name, [len(zs)], [fmt.encode(z) for z in zs]))
        us = [2 ** 64 - 1, 2 ** 63, 2 ** 63 + 2 ** 55 + 1, 12345] + [rng.getrandbits(64) >> rng.randint(0, 63) for _ in range(200)]
        emit("cast:" + name, [("u64", [len(us)], us)], (name, [len(us)], [fmt.encode(u) for u in us]))

    # f64 -> f32, i64 -> f32: NumPy.
    ds = [rng.uniform(-1, 1) * 2.0 ** rng.randint(-160, 140) for _ in range(2000)] + [1e300, -1e300, 1e-320, math.nan, math.inf]
    emit("cast:f32", [("f64", [len(ds)], [f64_bits(v) for v in ds])], ("f32", [len(ds)], [f32_bits(np.float32(v)) for v in ds]))
    zs = [rng.randint(-(2 ** 63), 2 ** 63 - 1) >> rng.randint(0, 62) for _ in range(500)] + [2 ** 24 + 1, 2 ** 63 - 1]
    emit("cast:f32", [("i64", [len(zs)], [z & (2 ** 64 - 1) for z in zs])], ("f32", [len(zs)], [round_to("f32", z) for z in zs]))
    emit("cast:f64", [("i64", [len(zs)], [z & (2 ** 64 - 1) for z in zs])], ("f64", [len(zs)], [f64_bits(float(z)) for z in zs]))

    # Floats to integers and bool, and integers to integers.
    specials = [0.0, -0.0, 0.5, -0.5, 0.999, 1.5, -1.5, 2.5, -2.5, 7.9, 8.0, -8.0, -8.9, 15.5, 16.0, 127.0, 128.0, -128.0,
                -129.0, 255.9, 256.0, 3e4, -3e4, 65535.0, 7e4, 2.0 ** 31, -(2.0 ** 31), 2.0 ** 32, 3e9, 1e19, 2.0 ** 63,
                -(2.0 ** 63), 1.8e19, 2.0 ** 64, 1e30, -1e30, math.inf, -math.inf, math.nan]
    for target in INT_BITS:
        for source in ("f32", "f64", "bf16", "f16"):
            src = [from_bits(source, round_to(source, v)) for v in specials]
            emit("cast:" + target, [(source, [len(src)], [to_bits(source, v) for v in src])],
                 (target, [len(src)], [to_bits(target, cast_float_to_int(target, v)) for v in src]))
        for source in ("i8", "i32", "i64", "u8", "u64", "i4", "u4", "bool"):
            n = INT_BITS[source]
            vals = sorted({wrap(source, rng.getrandbits(n)) for _ in range(40)} | {wrap(source, 0), wrap(source, -1)})
            if source == "bool":
                vals = [0, 1]
            if source in ("i4", "u4") and len(vals) % 2:
                vals.append(vals[0])
            if target in ("i4", "u4") and len(vals) % 2:
                vals.append(vals[0])
            expected = [to_bits(target, (1 if v else 0) if target == "bool" else wrap(target, v)) for v in vals]
            emit("cast:" + target, [(source, [len(vals)], [to_bits(source, v) for v in vals])], (target, [len(vals)], expected))
    for target in FLOATS:
        emit("cast:" + target, [("bool", [2], [0, 1])], (target, [2], [round_to(target, 0.0), round_to(target, 1.0)]))
        vals = [-8, -1, 0, 3, 7]
        emit("cast:" + target, [("i4", [6], [v & 15 for v in vals + [5]])], (target, [6], [round_to(target, float(v)) for v in vals + [5]]))


# ---- Operations --------------------------------------------------------------------------------

def random_values(dtype, shape, lo=-4.0, hi=4.0, special=False):
    n = int(np.prod(shape)) if shape else 1
    if dtype in FLOATS:
        vals = [rng.uniform(lo, hi) for _ in range(n)]
        if special and n >= 4:
            for k in rng.sample(range(n), min(3, n)):
                vals[k] = rng.choice([0.0, 1.0, -2.0, math.nan, math.inf, -math.inf])
        vals = [from_bits(dtype, round_to(dtype, v)) for v in vals]
    else:
        bits = INT_BITS[dtype]
        if dtype == "bool":
            vals = [rng.random() < 0.5 for _ in range(n)]
        elif dtype.startswith("u"):
            vals = [rng.choice([0, 1, 2, 3, 7, (1 << bits) - 1, rng.getrandbits(bits)]) for _ in range(n)]
        else:
            vals = [rng.choice([0, 1, -1, 2, -3, 5, -7, -(1 << (bits - 1)), (1 << (bits - 1)) - 1,
                                wrap(dtype, rng.getrandbits(bits))]) for _ in range(n)]
    return np.array(vals, dtype=object).reshape(shape)


def compute_dtype(dtype):
    return np.float64 if dtype == "f64" else np.float32


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": None, "mod": None,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "maximum": np.maximum, "minimum": np.minimum,
}
SHAPE_PAIRS = [([3, 4], [3, 4]), ([], [2, 3]), ([2, 3], []), ([], []), ([2, 1, 4], [3, 1]), ([4, 1], [1, 4]),
               ([1], [6]), ([2, 0, 2], [2]), ([0], [1]), ([5, 2], [2])]
OP_DTYPES = ["f32", "f64", "f16", "bf16", "f8e4m3", "f8e5m2", "i8", "i16", "i32", "i64", "u8", "u32", "u64", "i4", "u4"]


def even_shape(dtype, shape):
    """Packed i4/u4 tensors have an even last axis; widen one that is odd."""
    if dtype in ("i4", "u4") and shape and shape[-1] % 2:
        return shape[:-1] + [shape[-1] + 1] if shape[-1] != 1 else shape
    return shape


def binary_expected(op, dtype, x, y):
    if op in ("div", "mod"):
        if dtype in FLOATS:
            return (np.divide if op == "div" else np.remainder)(x, y)
        return (np.floor_divide if op == "div" else np.remainder)(x, y)  # 0 for a zero divisor
    return BINARY[op](x, y)


def operations():
    for dtype in OP_DTYPES:
        for op in BINARY:
            for sa, sb in SHAPE_PAIRS:
                sa, sb = even_shape(dtype, sa), even_shape(dtype, sb)
                if dtype in ("i4", "u4") and (sa == [] or sb == []) and (sa + sb) and (sa + sb)[-1] % 2:
                    continue
                a = T(dtype, random_values(dtype, sa, special=True))
                b = T(dtype, random_values(dtype, sb, special=True))
                x, y = values(a), values(b)
                if op in ("div", "mod") and dtype not in FLOATS:
                    y = y.copy()
                    if y.size:
                        y.reshape(-1)[0] = 0  # a zero divisor in every integer case
                        b = T(dtype, y)
                try:
                    np.broadcast_shapes(x.shape, y.shape)
                except ValueError:
                    continue
                r = binary_expected(op, dtype, x, y)
                rdtype = "bool" if r.dtype == np.bool_ else dtype
                emit(op, [a, b], result(rdtype, r))

    # Integer floor division and modulo on every sign combination, by NumPy.
    for dtype in ("i8", "i32", "i64"):
        vals = [-7, -6, -1, 0, 1, 6, 7, -(1 << (INT_BITS[dtype] - 1)), (1 << (INT_BITS[dtype] - 1)) - 1]
        xs = [[a for a in vals for b in vals]]
        ys = [[b for a in vals for b in vals]]
        a, b = T(dtype, np.array(xs, dtype=object)), T(dtype, np.array(ys, dtype=object))
        for op in ("div", "mod", "add", "sub", "mul"):
            emit(op, [a, b], result(dtype, binary_expected(op, dtype, values(a), values(b))))

    # Logic.
    p = T("bool", np.array([[True, False], [True, True], [False, False]], dtype=object))
    q = T("bool", np.array([True, False], dtype=object))
    emit("and", [p, q], result("bool", np.logical_and(values(p), values(q))))
    emit("or", [p, q], result("bool", np.logical_or(values(p), values(q))))
    emit("eq", [p, q], result("bool", np.equal(values(p), values(q))))

    # Unary.
    for dtype in OP_DTYPES:
        for op in ("neg", "abs"):
            t = T(dtype, random_values(dtype, even_shape(dtype, [3, 5]), special=True))
            x = values(t)
            r = (np.negative if op == "neg" else np.abs)(x)
            emit(op, [t], result(dtype, r))
    def libm(op, v):
        """Python's math (the platform's libm) for one f64 value; NaN in, NaN out."""
        if math.isnan(v):
            return v
        try:
            if op == "log" and v == 0:
                return -math.inf
            if op == "rsqrt":
                return 1.0 / math.sqrt(v) if v != 0 else math.copysign(math.inf, v)
            if op == "sigmoid":
                return 1.0 / (1.0 + math.exp(-v)) if -v < 709.0 else 0.0
            return getattr(math, op)(v)
        except ValueError:  # log or sqrt of a negative number, sin or cos of an infinity
            return math.nan
        except OverflowError:  # exp of a large argument
            return math.inf
    functions = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v), "tanh": np.tanh,
                 "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)), "sin": np.sin, "cos": np.cos}
    for dtype in FLOATS:
        for op, f in functions.items():
            lo = 0.0 if op in ("log", "sqrt", "rsqrt") else -6.0
            t = T(dtype, random_values(dtype, [40], lo, 6.0, special=True))
            x64 = values(t).astype(np.float64)
            if dtype == "f64":  # the platform's libm, as weft uses it (NumPy's own f64 kernels differ
                # from it by a few ulps where NumPy uses AVX-512 SIMD loops)
                r = np.array([libm(op, float(v)) for v in x64])
                emit(op, [t], result(dtype, r))
            else:  # in f64, rounded to f32, then once more to the type
                emit(op, [t], result(dtype, f(x64).astype(np.float32)))

    # Select.
    for dtype in ("f32", "bf16", "i8", "i4"):
        c = T("bool", random_values("bool", [2, 1, 4]))
        a = T(dtype, random_values(dtype, [3, 4]))
        b = T(dtype, random_values(dtype, [] if dtype != "i4" else [4]))
        emit("select", [c, a, b], result(dtype, np.where(values(c), values(a), values(b))))

    # Reductions over the last axis: sequential sums in f32 (f64), NumPy's NaN-propagating max/min
    # and first-index argmax.
    for dtype in OP_DTYPES:
        for shape in ([3, 6], [6], [2, 0], [0, 4], [2, 3, 2]):
            if dtype in ("i4", "u4") and shape[-1] % 2:
                continue
            t = T(dtype, random_values(dtype, shape, special=True))
            x = values(t)
            kind = compute_dtype(dtype) if dtype in FLOATS else (np.uint64 if dtype.startswith("u") else np.int64)
            acc = np.zeros(x.shape[:-1], dtype=kind)
            for i in range(x.shape[-1]):
                acc = (acc + x[..., i]).astype(kind)
            emit("sum", [t], result(dtype, acc))
            if dtype in FLOATS:
                emit("mean", [t], result(dtype, (acc / kind(x.shape[-1])).astype(kind)))
            if x.shape[-1] > 0:
                emit("max", [t], result(dtype, np.max(x, axis=-1)))
                emit("min", [t], result(dtype, np.min(x, axis=-1)))
                emit("argmax", [t], result("i64", np.argmax(x, axis=-1)))
    # NaN wins argmax, the first NaN; ties go to the first index.
    t = T("f32", np.array([[1.0, math.nan, 5.0, math.nan], [2.0, 7.0, 7.0, 1.0]], dtype=object))
    emit("argmax", [t], result("i64", np.argmax(values(t), axis=-1)))
    # Accumulation in f32: 4096 ones and a tail in bf16 sum exactly in f32 (a bf16 accumulator would
    # stop at 256), then round once.
    ones = np.array([1.0] * 4096 + [0.0078125] * 64, dtype=object)
    t = T("bf16", ones)
    acc = np.float32(0)
    for v in values(t):
        acc = np.float32(acc + v)
    emit("sum", [t], result("bf16", acc))
    t = T("f16", np.array([0.1] * 3000, dtype=object))
    acc = np.float32(0)
    for v in values(t):
        acc = np.float32(acc + v)
    emit("sum", [t], result("f16", acc))

    # `@` and matmul_f32: each element accumulated from +0 in index order, multiply then add, in f32.
    def matmul(x, y, kind):
        shape = np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
        x = np.broadcast_to(x, shape[:-2] + x.shape[-2:])
        y = np.broadcast_to(y, shape[:-2] + y.shape[-2:])
        acc = np.zeros(shape, dtype=kind)
        for p in range(x.shape[-1]):
            prod = (x[..., :, p:p + 1] * y[..., p:p + 1, :]).astype(kind)
            acc = (acc + prod).astype(kind)
        return acc

    for dtype in ("f32", "f64", "f16", "bf16", "f8e4m3", "i8", "i32", "u8", "i4"):
        for sa, sb in (([3, 4], [4, 2]), ([2, 3, 4], [4, 6]), ([2, 1, 2, 4], [3, 4, 2]), ([2, 0], [0, 2]), ([1, 4], [4, 0])):
            a = T(dtype, random_values(dtype, sa))
            b = T(dtype, random_values(dtype, sb))
            x, y = values(a), values(b)
            kind = compute_dtype(dtype) if dtype in FLOATS else (np.uint64 if dtype.startswith("u") else np.int64)
            emit("matmul", [a, b], result(dtype, matmul(x, y, kind)))
            emit("matmul_f32", [a, b], result("f32", matmul(x.astype(np.float32), y.astype(np.float32), np.float32)))
    a = T("bf16", random_values("bf16", [16, 64]))
    b = T("bf16", random_values("bf16", [64, 8]))
    emit("matmul", [a, b], result("bf16", matmul(values(a), values(b), np.float32)))

    # Shape operations, by NumPy on the bit patterns.
    for dtype in ("f32", "bf16", "i8", "i4", "bool", "f64"):
        x = random_values(dtype, [2, 3, 4])
        t = T(dtype, x)
        emit("transpose", [t], T(dtype, np.swapaxes(x, -1, -2)))
        emit("permute:2,0,1", [t], T(dtype, np.transpose(x, (2, 0, 1))))
        emit("permute:0,1,2", [t], T(dtype, x))
        emit("reshape:4,6", [t], T(dtype, x.reshape(4, 6)))
        emit("reshape:24", [t], T(dtype, x.reshape(24)))
        y = random_values(dtype, [2, 3, 2])
        emit("concat", [t, T(dtype, y)], T(dtype, np.concatenate([x, y], axis=-1)))
        emit("expand", [t], T(dtype, x[..., None]))
        emit("index:1", [t], T(dtype, x[1]))
        emit("index:1|2", [t], T(dtype, x[1, 2]))
        emit("index:0:1", [t], T(dtype, x[0:1]))
        emit("index:_|1:3", [t], T(dtype, x[:, 1:3]))
        emit("index:1|1:1", [t], T(dtype, x[1, 1:1]))
        emit("index:1|2|2:4", [t], T(dtype, x[1, 2, 2:4]))
        idx = np.array([1, 0, 1, 1], dtype=object)
        emit("gather", [t, T("i64", idx)], T(dtype, x[[1, 0, 1, 1]]))
        emit("gather", [t, T("i64", np.array([], dtype=object))], T(dtype, x[[]]))
        s = random_values(dtype, [])
        emit("full:2,4", [T(dtype, s)], T(dtype, np.full((2, 4), s, dtype=object)))
        emit("stack:%s:3,4" % dtype, [T(dtype, x[0]), T(dtype, x[1])], T(dtype, x))
        emit("stack:%s:2" % dtype, [], T(dtype, np.zeros((0, 2), dtype=object)))
    emit("iota:5", [], T("i64", np.arange(5)))
    emit("iota:0", [], T("i64", np.arange(0)))
    for dtype in ("f32", "bf16", "f8e4m3", "i4", "u8"):
        emit("ones:%s:2,2" % dtype, [], result(dtype, np.ones((2, 2))))
        emit("zeros:%s:4" % dtype, [], (dtype, [4], [0, 0, 0, 0]))

    # dequant [g]: f32(q) * f32(scale of the group), rounded once.
    for qtype, stype in (("i8", "bf16"), ("i4", "f16"), ("u4", "f32"), ("i8", "f64"), ("i32", "f8e4m3")):
        q = random_values(qtype, [2, 8])
        s = random_values(stype, [2, 2], 0.01, 2.0)
        kind = compute_dtype(stype)
        r = (values(T(qtype, q)).astype(kind) * np.repeat(values(T(stype, s)), 4, axis=-1)).astype(kind)
        emit("dequant:4", [T(qtype, q), T(stype, s)], result(stype, r))

    # Closures: reduce and scan with (+) round to the type at every step (unlike sum), map squares.
    for dtype in ("bf16", "f32", "i8", "u8"):
        x = values(T(dtype, random_values(dtype, [3, 5], 0, 40)))
        kind = x.dtype.type
        init = T(dtype, np.array(0, dtype=object))
        acc = [0] * 3
        steps = np.zeros((3, 5), dtype=object)
        for r in range(3):
            a = kind(0)
            for i in range(5):
                a = kind(from_bits(dtype, result(dtype, np.array(kind(a + x[r, i])))[2][0]))
                steps[r, i] = a
            acc[r] = a
        t = T(dtype, x)
        emit("reduce_add", [init, t], T(dtype, np.array(acc, dtype=object)))
        emit("scan_add", [init, t], T(dtype, steps))
        emit("map_square", [t], result(dtype, np.multiply(x, x)))
        emit("map2_sub", [t, t], result(dtype, np.subtract(x, x)))


def literals():
    """Decimal literals rounded once from their exact value (Fraction), at and just beside ties."""
    from fractions import Fraction
    decimal.getcontext().prec = 400
    tiny = decimal.Decimal("1e-60")
    for name, fmt in NARROW.items():
        texts = ["0.1", "3.14159", "1e-3", "2.5e-3", "-7", "448", "464", "465", "57344", "61440", "65504", "65519.99",
                 "65520", "1e10", "-1e10", "1e-30", "0"]
        keys = fmt.keys + [fmt.beyond]
        picks = rng.sample(range(len(keys) - 1), 40) + [len(keys) - 2, 0, 1]
        for i in picks:
            mid = decimal.Decimal((keys[i] + keys[i + 1]) / 2)  # exact: a dyadic rational
            texts += [str(mid), str(mid + tiny), str(mid - tiny)]
        for text in texts:
            emit("literal:%s:%s" % (name, text), [], (name, [], [fmt.encode(Fraction(text))]))
    for text in ("0.1", "1e300", "2.5e-3", "-0.3"):
        emit("literal:f64:%s" % text, [], ("f64", [], [f64_bits(float(text))]))


conversions()
operations()
literals()
