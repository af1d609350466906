"""Inputs and NumPy references for the kernel tests (tests/lit/kernels), and the comparison.

Usage: ref.py gemm|attention OUTDIR   writes the inputs (.npy) and expected/*.npy into OUTDIR
       ref.py compare OUTDIR          compares OUTDIR/NAME.npy with OUTDIR/expected/NAME.npy

The references are computed in f64 from the (rounded) inputs; a result passes when every element is
within 1e-2 of the reference, relative to the reference's largest magnitude (bf16 inputs and bf16
rounding of attention's probabilities make the kernels differ from f64 in the third digit).
"""
import os
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("error: numpy is missing for %s: run `make deps`" % sys.executable)

BF16 = np.dtype([("bf16", "<u2")])


def to_bf16(x):
    """float array -> (bf16 npy array, its values as f64), rounding to nearest even."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    values = (rounded.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return rounded.view(BF16).reshape(np.shape(x)), values.reshape(np.shape(x))


def load(path):
    a = np.load(path)
    if a.dtype.names:
        return (a["bf16"].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def save_bf16(name, x):
    arr, values = to_bf16(x)
    np.save(name + ".npy", arr)
    return values


def expect(name, values):
    np.save(os.path.join("expected", name + ".npy"), np.asarray(values, np.float64))


def gemm(rng):
    m, n, k = 256, 256, 128
    a = save_bf16("a", rng.standard_normal((m, k)))
    b = save_bf16("b", rng.standard_normal((k, n)))
    bt = save_bf16("bt", rng.standard_normal((n, k)))
    a16 = rng.standard_normal((m, k)).astype(np.float16)
    b16 = rng.standard_normal((k, n)).astype(np.float16)
    np.save("a16.npy", a16)
    np.save("b16.npy", b16)
    expect("c", a @ b)
    expect("c_nt", a @ bt.T)
    expect("c16", a16.astype(np.float64) @ b16.astype(np.float64))
    expect("c_bf16", a @ b)
    expect("c_f16", a16.astype(np.float64) @ b16.astype(np.float64))
    expect("c_bf16_f16", a @ b)
    expect("c_f16_bf16", a16.astype(np.float64) @ b16.astype(np.float64))


def softmax_attention(q, k, v, causal):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s, t = scores.shape[-2:]
        scores = np.where(np.arange(t)[None, :] <= np.arange(s)[:, None], scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def attention(rng):
    bh, s = 2, 256
    for d in (64, 128):
        q = save_bf16("q%d" % d, rng.standard_normal((bh, s, d)))
        k = save_bf16("k%d" % d, rng.standard_normal((bh, s, d)))
        v = save_bf16("v%d" % d, rng.standard_normal((bh, s, d)))
        expect("o%d" % d, softmax_attention(q, k, v, False))
        expect("o%d_causal" % d, softmax_attention(q, k, v, True))


def compare(outdir):
    names = sorted(f[:-4] for f in os.listdir(os.path.join(outdir, "expected")))
    failures = []
    for name in names:
        expected = load(os.path.join(outdir, "expected", name + ".npy"))
        path = os.path.join(outdir, name + ".npy")
        if not os.path.exists(path):
            failures.append("%s: the program did not save it" % name)
            continue
        actual = load(path)
        if actual.shape != expected.shape:
            failures.append("%s: shape %s, expected %s" % (name, actual.shape, expected.shape))
            continue
        error = np.abs(actual - expected).max() / np.abs(expected).max()
        if not error <= 1e-2:
            failures.append("%s: relative error %.3g" % (name, error))
    if failures:
        sys.exit("\n".join(failures))
    print("%d results within 1e-2" % len(names))


def main():
    what, outdir = sys.argv[1], sys.argv[2]
    if what == "compare":
        return compare(outdir)
    os.makedirs(os.path.join(outdir, "expected"), exist_ok=True)
    os.chdir(outdir)
    {"gemm": gemm, "attention": attention}[what](np.random.default_rng(7))


if __name__ == "__main__":
    main()
