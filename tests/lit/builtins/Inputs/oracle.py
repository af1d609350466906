"""The expected results of a tests/lit/builtins test, computed independently of weft's C++ code.

Usage: oracle.py TEST.weft OUTDIR

TEST.weft ends with a block comment that starts `{- oracle` and holds Python code. This script
empties OUTDIR, runs that code there with the helpers below, and so writes the weft program's
inputs (`inp`) and the expected results (`out`, into OUTDIR/expected/, with OUTDIR/manifest.json
saying how each one is compared). The weft program then runs in OUTDIR, loads the inputs, saves its
results under the same names, and compare.py checks them.

The inputs are random, seeded from the test's file name (so a failure reproduces); set
WEFT_ORACLE_SEED to another integer to draw other inputs (lit passes it through).

How the expected values are computed (docs/numerics.md states the rules):
- f32 and f64 arithmetic: NumPy in that type (IEEE, round to nearest even).
- f16, bf16: computed in f32 with NumPy, then rounded once: f16 with NumPy's float32 -> float16
  conversion, bf16 with the bit routine `bf16_round` below (NumPy has no bf16). bf16 values are held
  as float32 arrays whose values are bf16 values.
- Conversions from exact values (integers, f64 to 16-bit floats): `round_exact`, exact rational
  arithmetic with Python's Fraction.
- Integers: Python's unbounded integers, then wrapped to the type's width (floor division and modulo
  by Python's `//` and `%`, 0 for a zero divisor).
- Sums and `@`: sequential loops in index order (NumPy's own sum is pairwise).
- Transcendentals: NumPy in f64, rounded to f32, then to the narrow type; compared within an ulp
  bound stated by the test.
- random: a Philox-4x32-10 written here from the paper's definition (docs/runtime.md's mapping).
"""
import json
import math
import os
import re
import shutil
import sys
import zlib
from fractions import Fraction

try:
    import numpy as np
except ImportError:
    sys.exit("error: numpy is missing for %s: run `make deps` (it installs Debian's python3-numpy)" % sys.executable)

np.seterr(all="ignore")

# ---- dtypes ----------------------------------------------------------------------------------------

INT_BITS = {"i4": 4, "u4": 4, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
SIGNED = {"i4", "i8", "i16", "i32", "i64"}
NP_INT = {"i4": np.int8, "u4": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
# Float formats: (mantissa bits after the point, minimum normal exponent, maximum exponent).
FLOAT_FORMATS = {"f16": (10, -14, 15), "bf16": (7, -126, 127), "f32": (23, -126, 127), "f64": (52, -1022, 1023)}
FLOATS = set(FLOAT_FORMATS)


def is_float(dt):
    return dt in FLOATS


def is_int(dt):
    return dt in INT_BITS


def holder(dt):
    """The NumPy type that holds dt's values here."""
    if dt == "bool":
        return np.bool_
    if dt in NP_INT:
        return NP_INT[dt]
    return {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64}[dt]


def compute_type(dt):
    """What an operation on dt computes in: f32 up to 32-bit floats, f64, or Python integers."""
    if dt == "f64":
        return np.float64
    if is_float(dt):
        return np.float32
    return object


# ---- rounding --------------------------------------------------------------------------------------

def bf16_round(x):
    """float32 array -> float32 array of the nearest bf16 values (ties to even); NaN stays NaN."""
    x = np.asarray(x, np.float32)
    flat = x.reshape(-1)
    bits = flat.view(np.uint32).astype(np.uint64)
    lsb = (bits >> np.uint64(16)) & np.uint64(1)
    # Add just under half a bf16 ulp, plus one for an odd result, and truncate: ties go to even, and
    # a carry out of the mantissa goes into the exponent (the largest values round up to infinity).
    rounded = ((bits + np.uint64(0x7FFF) + lsb) >> np.uint64(16)) << np.uint64(16)
    out = rounded.astype(np.uint32).view(np.float32).copy()
    out[np.isnan(flat)] = np.nan
    return out.reshape(x.shape)


def round_exact(value, dt):
    """The value of `dt` nearest the exact number `value` (int, Fraction or float), ties to even;
    beyond the range: infinity. Returns a Python float (every format here fits in a double)."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return value
        negative = math.copysign(1.0, value) < 0
        value = Fraction(value)
    else:
        value = Fraction(value)
        negative = value < 0
    man, emin, emax = FLOAT_FORMATS[dt]
    a = abs(value)
    if a == 0:
        return -0.0 if negative else 0.0
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2^e <= a < 2^(e+2)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - man)
    n = a / quantum
    q, r = divmod(n.numerator, n.denominator)
    twice = 2 * r
    if twice > n.denominator or (twice == n.denominator and q % 2 == 1):
        q += 1
    result = q * quantum
    largest = (2 - Fraction(2) ** -man) * Fraction(2) ** emax
    f = math.inf if result > largest else float(result)
    return -f if negative else f


def round_to(dt, x):
    """Round a compute-type result (f32 or f64 array, or Python integers) once to dt."""
    if dt == "f64":
        return np.asarray(x, np.float64)
    if dt == "f32":
        return np.asarray(x, np.float32)
    if dt == "f16":
        assert np.asarray(x).dtype == np.float32, "round_to f16 expects an f32 result"
        return np.asarray(x, np.float32).astype(np.float16)
    if dt == "bf16":
        assert np.asarray(x).dtype == np.float32, "round_to bf16 expects an f32 result"
        return bf16_round(x)
    if dt == "bool":
        return np.asarray(x).astype(bool)
    return wrap(dt, x)


def literal(dt, text):
    """A weak literal: the decimal `text` rounded once, from its exact value, to dt."""
    if is_float(dt):
        return cast(dt, np.array(round_exact(Fraction(text), dt)))
    return wrap(dt, np.array(int(text), object))


def wrap(dt, x):
    """Integers (any size) -> dt's values: the low bits, sign-extended when signed."""
    bits = INT_BITS[dt]
    flat = [int(v) for v in np.asarray(x, dtype=object).reshape(-1)]
    out = []
    for v in flat:
        v &= (1 << bits) - 1
        if dt in SIGNED and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=NP_INT[dt]).reshape(np.shape(x))


def cast(dt, x):
    """`cast dt x` by docs/numerics.md's table, from x's values as held here (bf16 values are
    float32 values, which convert the same way)."""
    a = np.asarray(x)
    kind = a.dtype.kind
    if dt == "bool":
        return (a != 0) | (np.isnan(a) if kind == "f" else False)
    if is_float(dt):
        if kind == "b":
            return np.asarray(a.astype(np.float64), holder(dt)) if dt != "f16" else a.astype(np.float16)
        if kind == "f" and a.dtype == np.float64 and dt == "f32":
            return a.astype(np.float32)  # NumPy's double -> float rounds once, to nearest even
        if kind == "f" and a.dtype.itemsize <= 4 and dt in ("f32", "f64"):
            return a.astype(holder(dt))  # exact
        if kind == "f" and a.dtype == np.float32 and dt == "bf16":
            return bf16_round(a)
        if kind == "f" and a.dtype == np.float16 and dt == "bf16":
            return bf16_round(a.astype(np.float32))  # f16 -> f32 is exact
        values = [round_exact(float(v) if kind == "f" else int(v), dt) for v in a.reshape(-1)]
        if dt == "f16":
            return np.array(values, np.float64).astype(np.float16).reshape(a.shape)  # exact: already f16
        return np.array(values, holder(dt)).reshape(a.shape)
    # to an integer
    bits = INT_BITS[dt]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt in SIGNED else (0, (1 << bits) - 1)
    if kind == "f":
        out = []
        for v in a.reshape(-1):
            v = float(v)
            if math.isnan(v):
                out.append(0)
            elif math.isinf(v):
                out.append(hi if v > 0 else lo)
            else:
                out.append(min(max(math.trunc(v), lo), hi))
        return np.array(out, NP_INT[dt]).reshape(a.shape)
    return wrap(dt, a.astype(object))


# ---- computing as weft does ----------------------------------------------------------------------

def C(dt, x):
    """x (held as `holder(dt)`) in dt's compute type."""
    ct = compute_type(dt)
    a = np.asarray(x)
    if ct is object:
        return a.astype(object) if a.dtype != object else a
    return a.astype(ct)


def ew(dt, fn, *args, result=None):
    """An elementwise operation of weft on dt operands: compute fn in dt's compute type, round once to
    the result dtype (dt, or `result`, e.g. "bool" for comparisons)."""
    out = fn(*[C(dt, a) for a in args])
    return round_to(result or dt, out)


def floordiv(a, b):
    """Integer `/`: floor division, 0 for a zero divisor (Python integers)."""
    return np.frompyfunc(lambda x, y: 0 if y == 0 else x // y, 2, 1)(a, b)


def floormod(a, b):
    """Integer `%`: floor modulo, 0 for a zero divisor."""
    return np.frompyfunc(lambda x, y: 0 if y == 0 else x % y, 2, 1)(a, b)


def fmod_floor(a, b):
    """Float `%` (NumPy's remainder): fmod, moved into the divisor's sign; a zero takes b's sign."""
    a, b = np.broadcast_arrays(a, b)
    r = np.fmod(a, b)
    move = (r != 0) & ((r < 0) != (b < 0)) & (b == b)
    r = np.where(move, r + b, r)
    zero = (r == 0)
    return np.where(zero, np.copysign(np.zeros_like(r), b), r).astype(a.dtype)


def ieee_max(a, b):
    """IEEE 754-2019 maximum: NaN propagates, -0 < +0."""
    a, b = np.broadcast_arrays(a, b)
    if a.dtype == object:
        return np.where(a >= b, a, b)
    bigger = np.where(a > b, a, np.where(b > a, b, np.where(np.signbit(a), b, a)))
    return np.where(np.isnan(a) | np.isnan(b), np.nan, bigger).astype(a.dtype)


def ieee_min(a, b):
    a, b = np.broadcast_arrays(a, b)
    if a.dtype == object:
        return np.where(a <= b, a, b)
    smaller = np.where(a < b, a, np.where(b < a, b, np.where(np.signbit(a), a, b)))
    return np.where(np.isnan(a) | np.isnan(b), np.nan, smaller).astype(a.dtype)


def fold_last(dt, step, x, init):
    """Fold the last axis of x (dt values) in index order in the compute type, from init."""
    c = C(dt, x)
    acc = np.full(c.shape[:-1], init, dtype=c.dtype) if c.dtype != object else np.full(c.shape[:-1], init, object)
    for i in range(c.shape[-1]):
        acc = step(acc, c[..., i])
        if c.dtype != object:
            acc = np.asarray(acc, c.dtype)
    return acc


def seq_sum(dt, x):
    """weft's `sum`: index order from +0 in f32 (f64, wrapping integers), rounded once."""
    return round_to(dt, fold_last(dt, lambda acc, v: acc + v, x, 0))


def seq_mean(dt, x):
    s = fold_last(dt, lambda acc, v: acc + v, x, 0)
    ct = compute_type(dt)
    return round_to(dt, (s / ct(np.shape(x)[-1])).astype(ct))


def seq_max(dt, x):
    c = C(dt, x)
    acc = c[..., 0]
    for i in range(1, c.shape[-1]):
        acc = ieee_max(acc, c[..., i])
    return round_to(dt, acc)


def seq_min(dt, x):
    c = C(dt, x)
    acc = c[..., 0]
    for i in range(1, c.shape[-1]):
        acc = ieee_min(acc, c[..., i])
    return round_to(dt, acc)


def first_argmax(x):
    """The first index of the largest value, or of the first NaN, along the last axis."""
    a = np.asarray(x)
    flat = a.reshape(-1, a.shape[-1])
    out = []
    for row in flat:
        best = 0
        for i in range(len(row)):
            if row.dtype.kind == "f" and math.isnan(float(row[i])):
                best = i
                break
            if row[i] > row[best]:
                best = i
        out.append(best)
    return np.array(out, np.int64).reshape(a.shape[:-1])


def seq_matmul(dt, a, b, result=None):
    """weft's `@`: batch dims broadcast; each product rounded to the compute type and added in index
    order from +0; rounded once to the result type."""
    ca, cb = C(dt, a), C(dt, b)
    batch = np.broadcast_shapes(ca.shape[:-2], cb.shape[:-2])
    m, k = ca.shape[-2:]
    k2, n = cb.shape[-2:]
    assert k == k2
    ca = np.broadcast_to(ca, batch + (m, k))
    cb = np.broadcast_to(cb, batch + (k, n))
    acc = np.zeros(batch + (m, n), dtype=ca.dtype) if ca.dtype != object else np.full(batch + (m, n), 0, object)
    for i in range(k):
        prod = ca[..., :, i, None] * cb[..., None, i, :]
        if ca.dtype != object:
            prod = prod.astype(ca.dtype)
            acc = (acc + prod).astype(ca.dtype)
        else:
            acc = acc + prod
    return round_to(result or dt, acc)


# ---- random: Philox-4x32-10 --------------------------------------------------------------------------

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    c = list(counter)
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK32, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK32]
    return c


def random_words(count, seed):
    """Words w0..w3 of the blocks of counter (i mod 2^32, i / 2^32, 0, 0) for i < count."""
    s = seed & 0xFFFFFFFFFFFFFFFF
    key = (s & MASK32, s >> 32)
    return [philox4x32_10((i & MASK32, i >> 32, 0, 0), key) for i in range(count)]


def random_tensor(dt, shape, seed):
    """`random shape seed` of element type dt (docs/runtime.md)."""
    count = int(np.prod(shape, dtype=np.int64))
    words = random_words(count, seed)
    if is_float(dt):
        u = np.array([(w[0] >> 8) * 2.0 ** -24 for w in words], np.float32).reshape(shape)
        return cast(dt, u)
    if dt == "bool":
        return np.array([w[0] >> 31 for w in words], bool).reshape(shape)
    if INT_BITS[dt] == 64:
        return wrap(dt, np.array([w[0] | w[1] << 32 for w in words], object).reshape(shape))
    return wrap(dt, np.array([w[0] for w in words], object).reshape(shape))


# ---- inputs and expected results ----------------------------------------------------------------------

SEED = 0
rng = None
manifest = []


def npy_array(dt, values):
    """values as the array weft reads and writes for dt (docs/npy.md)."""
    a = np.asarray(values, holder(dt))
    if dt == "bf16":
        flat = a.reshape(-1)
        bits = (flat.view(np.uint32) >> 16).astype(np.uint16)
        assert np.array_equal((bits.astype(np.uint32) << 16).view(np.float32), flat, equal_nan=True), \
            "oracle error: a bf16 value that is not a bf16"
        return bits.view([("bf16", "<u2")]).reshape(a.shape)
    if dt in ("i4", "u4"):
        return a.view([(dt, "|i1" if dt == "i4" else "|u1")])  # one element a byte, by value
    return a


def check_exact(dt, values):
    """Refuses float values that are not exactly dt's (an oracle that forgot to round)."""
    a = np.asarray(values)
    if is_float(dt) and a.dtype.kind == "f":
        back = cast(dt, a)
        same = (back.astype(np.float64) == a.astype(np.float64)) | (np.isnan(back) & np.isnan(a))
        assert same.all(), "oracle error: expected %s values not exactly representable" % dt
        return back
    if dt == "bool":
        return a.astype(bool)
    if is_int(dt):
        return wrap(dt, a.astype(object))
    return a


def inp(name, dt, values):
    """Save an input NAME.npy of weft dtype dt (values rounded to dt with `cast`), and return its
    values as held here."""
    a = cast(dt, np.asarray(values))
    np.save(name + ".npy", npy_array(dt, a))
    return a


def out(name, dt, values, ulp=0):
    """The expected result NAME.npy of dtype dt; ulp: how many units in the last place of dt it may
    differ by (0: bit for bit, NaN equal to any NaN)."""
    a = check_exact(dt, values)
    np.save(os.path.join("expected", name + ".npy"), npy_array(dt, a))
    manifest.append({"name": name, "dtype": dt, "ulp": ulp})


def randn(shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def uniform(shape, lo, hi):
    return rng.uniform(lo, hi, shape)


def ints(dt, shape, lo=None, hi=None):
    """Uniform integers of dt's range (or [lo, hi])."""
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    bits = INT_BITS[dt]
    if lo is None:
        lo = -(1 << (bits - 1)) if dt in SIGNED else 0
    if hi is None:
        hi = (1 << (bits - 1)) - 1 if dt in SIGNED else (1 << bits) - 1
    return rng.integers(lo, hi, shape, endpoint=True, dtype=NP_INT[dt])


def libm(name, values):
    """The platform's libm (Python's math module) applied to each f64 value: what weft's interpreter
    computes. NumPy's own f64 loops are not libm: with AVX-512 NumPy 1.24 uses SIMD kernels that
    differ from it by a few ulps. NaN where math raises (infinities)."""
    f = getattr(math, name)

    def one(v):
        try:
            return f(v)
        except (ValueError, OverflowError):
            return math.nan
    return np.array([one(float(v)) for v in np.asarray(values, np.float64).reshape(-1)]).reshape(np.shape(values))


def specials(dt):
    """Values at the edges of float format dt: zeros, subnormals, the largest, infinities, NaN."""
    man, emin, emax = FLOAT_FORMATS[dt]
    largest = float((2 - Fraction(2) ** -man) * Fraction(2) ** emax)
    tiny = 2.0 ** (emin - man)
    v = [0.0, -0.0, tiny, -tiny, 2.0 ** emin, largest, -largest, math.inf, -math.inf, math.nan, 1.0, -1.0,
         0.5, 3.0, 2.0 ** emin - tiny]
    return np.array(v, np.float64)


def with_specials(dt, values):
    """values (a 1-d or n-d float array) with the first entries replaced by `specials(dt)`."""
    a = np.array(values, np.float64)
    flat = a.reshape(-1)
    s = specials(dt)
    n = min(len(s), flat.size)
    flat[:n] = s[:n]
    return a


def main():
    global SEED, rng
    test, outdir = sys.argv[1], sys.argv[2]
    with open(test, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"^\{- oracle\n(.*?)^-\}", text, re.S | re.M)
    if not match:
        sys.exit("error: %s has no `{- oracle ... -}` block" % test)
    name = os.path.basename(test)
    SEED = zlib.crc32(name.encode()) ^ int(os.environ.get("WEFT_ORACLE_SEED", "0") or 0)
    rng = np.random.default_rng(SEED)
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(os.path.join(outdir, "expected"))
    os.chdir(outdir)
    code = compile("\n" * text[:match.start(1)].count("\n") + match.group(1), test, "exec")
    exec(code, dict(globals()))
    with open("manifest.json", "w") as f:
        json.dump({"test": name, "seed": SEED, "outputs": manifest}, f, indent=1)


if __name__ == "__main__":
    main()
