#!/usr/bin/env python3
"""Compares a `.npy` file a GPU executable wrote with the interpreter's, within a relative tolerance
(gpu.md): ||out - ref|| / ||ref|| under it, no NaN the reference lacks (positions NaN in both
agree), and integer and bool files identical. bf16 is read from its bit patterns (docs/npy.md);
other structured dtypes (f8, i4/u4) are compared by their fields' integers, exactly.

  compare_npy.py OUT REF TOLERANCE     prints one line; exit status 0 when it passes, 1 when not

check-programs calls it for a file that is not identical to its reference;
tools/fuzz-programs/check-on-device imports `compare`.
"""
import sys

import numpy as np


def values(path):
    """The file's values as float64, and whether they must match exactly."""
    a = np.load(path)
    if a.dtype.names:
        field = a.dtype.names[0]
        bits = a[field]
        if field == "bf16":
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64), False
        return bits.astype(np.float64), True
    return a.astype(np.float64), a.dtype.kind in "iub"


def compare(out_path, ref_path, tolerance):
    """(passed, line) for OUT against REF."""
    (out, _), (ref, exact) = values(out_path), values(ref_path)
    if out.shape != ref.shape:
        return False, f"shape {out.shape}, the interpreter's {ref.shape}"
    if exact:
        wrong = np.flatnonzero(out.ravel() != ref.ravel())
        if wrong.size == 0:
            return True, "identical values"
        i = wrong[0]
        return False, (f"{wrong.size} of {ref.size} elements differ (integers must be exact), the first at flat "
                       f"index {i}: {out.ravel()[i]:g}, the interpreter's {ref.ravel()[i]:g}")
    both = np.isnan(out) & np.isnan(ref)
    out, ref = np.where(both, 0, out), np.where(both, 0, ref)
    nan = int(np.isnan(out).sum() - np.isnan(ref).sum())
    norm = np.linalg.norm(ref)
    rel = np.linalg.norm(out - ref) / norm if norm > 0 else np.linalg.norm(out)
    diff = np.abs(out - ref)
    line = (f"relative error {rel:.2e} (tolerance {tolerance:g}), max abs error "
            f"{np.nanmax(diff) if diff.size else 0:.3g}" + (f", {nan} NaN the interpreter has not" if nan else ""))
    return bool(rel < tolerance and nan <= 0), line


if __name__ == "__main__":
    passed, line = compare(sys.argv[1], sys.argv[2], float(sys.argv[3]))
    print(line)
    sys.exit(0 if passed else 1)
