# The oracle of format_test.cpp: writes arrays as .npy files with what NumPy's print shows for them.
#
#   numpy_print_cases.py DIR [arrays] [DTYPE...]
#
# writes (for `arrays`) DIR/NAME.npy and DIR/NAME.txt (str(array)) for each case, DIR/cases.txt
# listing the names, and (for each DTYPE) DIR/scalars_DTYPE.txt with one `hexbits text` line per scalar (every f16, bf16 and f8 pattern,
# a sample of f32 and f64 ones). NumPy lacks bf16 and f8: their expected text is NumPy's print of
# the float64 array of each value's shortest round-tripping decimal, found here independently with
# exact rational arithmetic; those cases stay where that is the same thing (positional, no digit
# cut-off).
import sys
from fractions import Fraction

import numpy as np

out = sys.argv[1]
wanted = set(sys.argv[2:]) or {"arrays", "f16", "bf16", "f8e4m3", "f8e5m2", "f32", "f64"}
names = []


def case(name, arr, expected=None, save=None):
    if "arrays" not in wanted:
        return
    names.append(name)
    np.save(f"{out}/{name}.npy", arr if save is None else save)
    with open(f"{out}/{name}.txt", "w") as f:
        f.write(str(arr) if expected is None else expected)


rng = np.random.default_rng(20240601)
nan, inf = np.nan, np.inf

# Floats, 1-D.
f64_cases = {
    "simple": [1.0, 2.5],
    "thirds": [1 / 3, 2 / 3, 1.0],
    "tenths": [0.1, 0.2, 0.1 + 0.2],
    "negative": [-1.5, 2.0, -3.25],
    "mixed_small": [1e-5, 1.5],
    "tiny": [1e-5, 1e-6],
    "huge": [1e8, 1.0],
    "extremes": [1e-300, 1e300, -1.0],
    "nonfinite_mixed": [nan, inf, -inf, 1.5],
    "nan_only": [nan],
    "inf_only": [inf, -inf],
    "nan_inf": [nan, inf],
    "zeros": [0.0, -0.0],
    "neg_zero": [-0.0],
    "ratio_at_1000": [0.5, 500.0],
    "ratio_above_1000": [0.5, 500.5],
    "cutoff": [9.999999999, 1.0, 0.123456789123],
    "round_half_even": [0.125, 0.375, 2.0000000050],
    "below_1e8": [99999999.0, 1.5],
    "exact_1e16": [1e16, 1e15],
    "wide_ints": [1e7, -1e7, 0.5],
    "with_nan_exp": [1e-7, nan, -inf],
    "pi_steps": list(np.pi * np.arange(10)),
    "linspace": list(np.linspace(0, 1, 101)),
    "normal": list(rng.standard_normal(30)),
    "exp_normal": list(rng.standard_normal(40) * 1e-6),
    "big_exponent": [1e100, 1.0, 1e-100],
    "denormal": [5e-324, 1.0],
}
for name, values in f64_cases.items():
    case("f64_" + name, np.array(values, dtype=np.float64))

f32_cases = {
    "normal": rng.standard_normal(50),
    "min_threshold": [np.float32(1e-4), 1.0],
    "tenth": [0.1, 0.7, 1e-3],
    "int_limit": [16777216.0, 1.0, 3.0],
    "max": [3.4028235e38, -3.4028235e38],
    "big": [1e20, 1.0],
    "uniform": rng.random(17),
    "ratio": [1.0, 1000.0001],
}
for name, values in f32_cases.items():
    case("f32_" + name, np.array(values, dtype=np.float32))

# f16 arrays from random bit patterns of several magnitudes, and hand-picked ones.
for k in range(40):
    bits = rng.integers(0, 0x7C00, size=int(rng.integers(1, 12)), dtype=np.uint16)
    if k % 3 == 0:
        bits = (bits & 0x03FF) | np.uint16(0x3C00 + 0x400 * int(rng.integers(-3, 3)))  # one binade
    bits |= (rng.integers(0, 2, size=bits.size, dtype=np.uint16) << 15) if k % 2 else np.uint16(0)
    case(f"f16_random{k}", bits.view(np.float16))
case("f16_tenth", np.array([0.1, 1.234e-5], dtype=np.float16))
case("f16_boundaries", np.array([33216, 33184, 65504, 6e-8], dtype=np.float16))
case("f16_integer_digits", np.array([111.5, 29008], dtype=np.float16))  # 29008, not the shortest 29010
case("f32_integer_digits", np.array([99999992.0, 1.5], dtype=np.float32))
case("f16_positional", np.array([0.1, 0.2, 0.3, 1.0, 2.5, -7.75], dtype=np.float16))

# Shapes: wrapping, nesting, summarization.
case("int_3d", np.arange(24).reshape(2, 3, 4))
case("float_3d", np.arange(24).reshape(2, 3, 4) / 7)
case("float_4d", (np.arange(16).reshape(2, 2, 2, 2) - 8) * 0.25)
case("unit_dims", np.arange(3.0).reshape(3, 1, 1))
case("column", np.arange(5).reshape(5, 1))
case("wrap_ints", np.arange(100) * 1234567)
case("wrap_floats_2d", rng.standard_normal((3, 12)))
case("summarized_1d", np.arange(2000))
case("summarized_2d", np.arange(3000).reshape(30, 100) * 0.5)
case("summarized_3d", rng.standard_normal((10, 10, 20)))
case("summarized_tall", np.arange(2002).reshape(1001, 2))
case("summarized_wide", np.arange(1200).reshape(2, 600) - 600)
case("threshold_exact", np.arange(1000) * 0.001)
case("summarized_exp", np.concatenate([np.arange(1500.0), [1e-9]]))
case("summarized_nonfinite", np.where(np.arange(1100) % 7 == 0, np.nan, np.arange(1100.0)))

# Integers of each width, bool.
for t in [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]:
    info = np.iinfo(t)
    case(f"int_{np.dtype(t).name}", np.array([info.min, 0, 1, info.max], dtype=t))
    case(f"int_{np.dtype(t).name}_small", np.array([[3, 1], [0, 2]], dtype=t))
case("int_negative_widths", np.array([-5, 10, 100, -1000]))
case("bool_1d", np.array([True, False, True]))
case("bool_true", np.array([True]))
case("bool_2d", np.array([[True], [False]]))
case("bool_summarized", np.arange(1500) % 3 == 0)

# Empty arrays.
case("empty_1d", np.zeros(0))
case("empty_2d", np.zeros((2, 0), dtype=np.int32))
case("empty_bool", np.zeros((0, 3), dtype=bool))

# Rank-0 arrays print as scalars.
for name, value in {
    "f32": np.float32(1.5), "f64_small": np.float64(1e-5), "f32_big": np.float32(1e20),
    "f64_nan": np.float64(nan), "f64_neg_inf": np.float64(-inf), "f64_neg_zero": np.float64(-0.0),
    "f16": np.float16(100.0), "i64": np.int64(3), "u8": np.uint8(255), "bool": np.bool_(True),
    "i8_neg": np.int8(-7), "f64_int": np.float64(1e15),
}.items():
    case("scalar_" + name, np.array(value))

# i4/u4: NumPy's int8/uint8 print, from the one-field structured files of docs/npy.md.
i4 = np.array([[-8, 7, 0], [-1, 3, 5]], dtype=np.int8)
case("i4", i4, save=i4.view([("i4", "|i1")]).reshape(2, 3))
u4 = np.array([0, 15, 9, 1], dtype=np.uint8)
case("u4", u4, save=u4.view([("u4", "|u1")]))


# Narrow formats NumPy lacks: exact rounding with Fractions, shortest decimals by search.
FORMATS = {"bf16": (8, 7, True), "f8e4m3": (4, 3, False), "f8e5m2": (5, 2, True)}


def decode(fmt, bits):
    e_bits, m_bits, ieee = FORMATS[fmt]
    sign = -1 if bits >> (e_bits + m_bits) else 1
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    bias = (1 << (e_bits - 1)) - 1
    if e == (1 << e_bits) - 1 and (ieee or m == (1 << m_bits) - 1):
        return None  # inf or nan
    if e == 0:
        return sign * Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)


def round_to(fmt, x):
    e_bits, m_bits, _ = FORMATS[fmt]
    emin = 2 - (1 << (e_bits - 1))
    if x == 0:
        return Fraction(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - m_bits)
    return (1 if x > 0 else -1) * round(a / quantum) * quantum  # round(): ties to even


def shortest(fmt, v):
    if v == 0:
        return "0.0"
    for p in range(1, 30):
        text = "%.*e" % (p - 1, float(v))
        mantissa, exp = text.split("e")
        step = Fraction(10) ** (int(exp) - (p - 1))
        base = Fraction(mantissa.replace(".", "")) * step
        found = [c for c in (base - step, base, base + step) if round_to(fmt, c) == v]
        if found:
            # The nearest; between two as near, the even last digit (as Dragon4 and Ryu choose).
            best = min(found, key=lambda c: (abs(c - v), int(c / step) % 2))
            return repr(float(best))
    raise AssertionError(v)


def narrow_case(name, fmt, values):
    if "arrays" not in wanted:
        return
    bits = []
    patterns = range(1 << (16 if fmt == "bf16" else 8))
    table = {p: decode(fmt, p) for p in patterns}
    for x in values:
        r = round_to(fmt, Fraction(x))
        bits.append(min(p for p, v in table.items() if v == r and (p >> (15 if fmt == "bf16" else 7)) == (x < 0)))
    decimals = [float(shortest(fmt, table[b])) for b in bits]
    arr = np.array(bits, dtype=np.uint16 if fmt == "bf16" else np.uint8)
    base = "<u2" if fmt == "bf16" else "|u1"
    case(name, np.array(decimals), save=arr.view([(fmt, base)]))


narrow_case("bf16_positional", "bf16", [1.0, 0.1, 3.14159, -2.5, 50.3, 0.33])
narrow_case("bf16_ints", "bf16", [1.0, 2.0, 3.0, 256.0, -100.0])
narrow_case("f8e4m3_positional", "f8e4m3", [1.0, 0.1, 3.14159, -2.5, 40.0, 0.33])
narrow_case("f8e5m2_positional", "f8e5m2", [1.0, 0.1, 3.14159, -2.5, 40.0, 0.33])

if "arrays" in wanted:
    with open(f"{out}/cases.txt", "w") as f:
        f.write("\n".join(names) + "\n")


# Scalars: every f16, bf16 and f8 pattern; random f32 and f64 patterns.
def scalar_lines(fmt, patterns):
    if fmt not in wanted:
        return
    lines = []
    for p in patterns:
        if fmt == "f16":
            text = str(np.uint16(p).view(np.float16))
        elif fmt in ("f32", "f64"):
            t = np.uint32 if fmt == "f32" else np.uint64
            text = str(t(p).view(np.float32 if fmt == "f32" else np.float64))
        else:
            v = decode(fmt, p)
            if v is None:
                continue
            text = str(np.float64(shortest(fmt, v)))
            # NumPy decides positional vs scientific on the value itself; skip the rare patterns
            # whose shortest decimal lies on the other side of 1e-4 or 1e16 than the value.
            d = abs(Fraction(shortest(fmt, v)))
            if (d < Fraction(1, 10**4)) != (abs(v) < Fraction(1, 10**4)) and v != 0:
                continue
            if (d >= 10**16) != (abs(v) >= 10**16):
                continue
            if p >> (15 if fmt == "bf16" else 7) and v == 0:
                text = "-0.0"
        lines.append(f"{p:x} {text}")
    with open(f"{out}/scalars_{fmt}.txt", "w") as f:
        f.write("\n".join(lines) + "\n")


scalar_lines("f16", range(1 << 16))
scalar_lines("bf16", list(range(0, 1 << 16, 13)) + list(range(0, 130)))  # a sample: exact search is slow
scalar_lines("f8e4m3", range(256))
scalar_lines("f8e5m2", range(256))
scalar_lines("f32", [int(x) for x in rng.integers(0, 1 << 32, size=20000, dtype=np.uint64)])
scalar_lines("f64", [int(x) for x in rng.integers(0, 1 << 63, size=20000, dtype=np.uint64)]
             + [int(x) | (1 << 63) for x in rng.integers(0, 1 << 63, size=2000, dtype=np.uint64)])
