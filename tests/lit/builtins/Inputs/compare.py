"""Compares a builtins test's results with the oracle's (oracle.py wrote OUTDIR/manifest.json).

Usage: compare.py OUTDIR

For each expected result NAME of the manifest, OUTDIR/NAME.npy (what the weft program saved) must
have the expected dtype and shape, and each element must be the expected one: the same bits (a NaN
equal to any NaN), or for a result with an ulp bound, at most that many representable values of its
dtype away (the same infinity, NaN where NaN is expected). Prints the first mismatches with their
indices, expected and actual values and bit patterns; exit status 1 if any.
"""
import json
import os
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("error: numpy is missing for %s: run `make deps` (it installs Debian's python3-numpy)" % sys.executable)

UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def load(path):
    """An array as (kind, values, bits): bf16 decoded to float32 values with its 16-bit patterns."""
    a = np.load(path)
    if a.dtype.names and a.dtype.names[0] in ("i4", "u4"):
        return a.dtype.names[0], a[a.dtype.names[0]], a[a.dtype.names[0]]
    if a.dtype.names:
        assert a.dtype.names == ("bf16",), "unexpected structured dtype %s" % a.dtype
        bits = a["bf16"]
        values = (bits.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(bits.shape)
        return "bf16", values, bits
    if a.dtype.kind == "f":
        return str(a.dtype), a, a.view(UINT[a.dtype.itemsize])
    return str(a.dtype), a, a


def ordered(values, bits, width):
    """Float bit patterns as integers that are consecutive for consecutive values (+0 and -0 both 0)."""
    b = bits.astype(np.int64) if width < 64 else bits.view(np.int64)
    sign = np.int64(1) << (width - 1) if width < 64 else np.int64(-2 ** 63)
    magnitude = b & ~sign if width < 64 else b & np.int64(2 ** 63 - 1)
    return np.where(values < 0, -magnitude, magnitude)


def compare(outdir, entry):
    name, ulp = entry["name"], entry["ulp"]
    expected_path = os.path.join(outdir, "expected", name + ".npy")
    actual_path = os.path.join(outdir, name + ".npy")
    if not os.path.exists(actual_path):
        return ["%s: the program did not save %s" % (name, actual_path)]
    ekind, evals, ebits = load(expected_path)
    akind, avals, abits = load(actual_path)
    if ekind != akind:
        return ["%s: dtype %s, expected %s" % (name, akind, ekind)]
    if evals.shape != avals.shape:
        return ["%s: shape %s, expected %s" % (name, list(avals.shape), list(evals.shape))]
    if evals.dtype.kind == "f":
        enan, anan = np.isnan(evals), np.isnan(avals)
        if ulp == 0:
            bad = (ebits != abits) & ~(enan & anan)
        else:
            width = 16 if ekind == "bf16" else evals.dtype.itemsize * 8
            finite = np.isfinite(evals) & np.isfinite(avals)
            with np.errstate(all="ignore"):
                distance = np.abs(ordered(evals, ebits, width) - ordered(avals, abits, width))
            same_special = (enan & anan) | (~finite & ~enan & ~anan & (evals == avals))
            bad = ~same_special & ~(finite & (distance <= ulp))
    else:
        bad = evals != avals
    if not bad.any():
        return []
    where = np.argwhere(bad) if bad.ndim else [()]
    lines = ["%s: %d of %d elements differ%s; the first:" % (
        name, int(bad.sum()), bad.size, " (more than %d ulp)" % ulp if ulp else "")]
    for index in where[:8]:
        index = tuple(int(i) for i in index)
        if evals.dtype.kind == "f":
            lines.append("  at %s: expected %r (0x%x), got %r (0x%x)" % (
                list(index), float(evals[index]), int(ebits[index]), float(avals[index]), int(abits[index])))
        else:
            lines.append("  at %s: expected %r, got %r" % (list(index), evals[index].item(), avals[index].item()))
    return lines


def main():
    outdir = sys.argv[1]
    with open(os.path.join(outdir, "manifest.json")) as f:
        manifest = json.load(f)
    if not manifest["outputs"]:
        sys.exit("error: the oracle of %s expects no results" % manifest["test"])
    failures = []
    for entry in manifest["outputs"]:
        failures += compare(outdir, entry)
    if failures:
        print("%s (seed %d; inputs and results in %s):" % (manifest["test"], manifest["seed"], outdir))
        print("\n".join(failures))
        sys.exit(1)
    print("%s: %d results as expected" % (manifest["test"], len(manifest["outputs"])))


if __name__ == "__main__":
    main()
