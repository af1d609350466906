#!/usr/bin/env python3
"""bench/gemm and bench/attention through the Python package: the stdlib gemm and attention as a
Python user gets them, called on PyTorch CUDA tensors beside cuBLAS and SDPA in one process on one
GPU (bench/gemm/README.md, bench/attention/README.md, docs/python.md):

    package.py LIBRARY... [--only gemm|attention]

Each LIBRARY is bench/gemm/package.weft built with `weft build --shared` (one per target: sm_90a,
and sm_80 to see that path on the same GPU). At the sizes of bench/gemm/cases.txt and
bench/attention/cases.txt:

- gemm, M = N = K in {1024, 2048, 4096, 8192}: `mod.gemm(a, b)` (bf16 out: the stdlib
  gemm_bf16_bf16) and `mod.gemm_f32(a, b)` (f32 out: gemm_bf16) beside cuBLAS, `a @ b` on the same
  bf16 tensors (bf16 out; the anchor of both, as bench/gemm/bench.py has it).
- attention, 16k tokens (batch = 16384 / seq), 2048 / d heads, seq in {1024, 4096, 16384}, head dims
  128 and 64, causal and not: `mod.attentionD` / `mod.causal_attentionD` (nn's attention on
  [bh, s, d], bf16 out: the stdlib attention_dD_bf16) and the `_f32` exports (the f32-output
  kernels called by name) beside PyTorch SDPA's flash backend (and cuDNN's, where it runs) on the
  same memory viewed 4-D, [batch, heads, s, d]: SDPA takes its flash kernel only for 4-D inputs
  (3-D falls back to the math path, 40x slower at 32 heads x 2048 x 128 causal on an H200).

Every result is first compared with an f32 reference computed from the same bf16 inputs
(‖out − ref‖ / ‖ref‖ under 2e-2, as bench/models/bench.py; NaN fails; the anchor's error beside it);
then weft and the anchor are timed with triton.testing.do_bench (median, milliseconds, the same
warm-up and repetitions for both, the L2 flushed before each call), each weft call made through the
package as a user makes it. A few small calls check the routing: sizes the stdlib kernels' `where`
clauses refuse take the generic parts (nn's attention, the product), and the f32 kernels called by
name refuse them with weft.ShapeError.

Prints PASS/FAIL lines and one table (also $OUT/package.md when OUT is set); exits 1 when a check
failed. A failed call is a FAIL line and a row without a time; the rest still runs.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import triton

import weft

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import BOUND, bench, check, finish, rel  # noqa: E402  (bench/checks.py)

GEMM_SIZES = [1024, 2048, 4096, 8192]
ATTENTION = [(d, causal, seq) for d in (128, 64) for causal in (False, True) for seq in (1024, 4096, 16384)]
TOKENS, WIDTH = 16384, 2048  # bench/attention's shapes: batch = TOKENS / seq, heads = WIDTH / d
REFERENCE_BYTES = 1 << 31  # the f32 attention reference's scores, a chunk of heads at a time

rows = []  # dicts: case, target, export, weft ms, flops, anchors [(name, ms)], errors


def call(fn, *args):
    """fn(*args), or None after a FAIL line when it raises."""
    try:
        return fn(*args)
    except Exception as e:  # a weft error, a launch failure: said, and the run goes on
        check(getattr(fn, "__name__", str(fn)), False, "%s: %s" % (type(e).__name__, str(e)[:300]))
        return None


def targets(mods):
    return [(m.library.exports[0].target if m.library.exports else "?", m) for m in mods]


# ---- gemm ----

def gemm_rows(mods, gen):
    for s in GEMM_SIZES:
        a = torch.randn(s, s, device="cuda", generator=gen).to(torch.bfloat16)
        b = torch.randn(s, s, device="cuda", generator=gen).to(torch.bfloat16)
        ref = a.float() @ b.float()
        cublas = a @ b
        e_cublas = rel(cublas, ref)
        del cublas
        anchors = [("cuBLAS", bench(lambda: a @ b))]
        case = "gemm M=N=K=%d" % s
        for target, mod in targets(mods):
            for name, dtype in (("gemm", torch.bfloat16), ("gemm_f32", torch.float32)):
                fn = getattr(mod, name)
                out = call(fn, a, b)
                row = dict(case=case, target=target, export=name, flops=2 * s ** 3, anchors=anchors,
                           ms=None, error=None, anchor_error=e_cublas)
                rows.append(row)
                if out is None:
                    continue
                row["error"] = e = rel(out, ref)
                check("%s %s %s" % (name, case, target),
                      tuple(out.shape) == (s, s) and out.dtype == dtype and e < BOUND,
                      "%s %s, weft %.2e, cuBLAS %.2e from the f32 reference" % (out.dtype, tuple(out.shape), e, e_cublas))
                del out
                row["ms"] = bench(lambda: fn(a, b))
        del a, b, ref
        torch.cuda.empty_cache()


# ---- attention ----

def attention_reference(q, k, v, causal):
    """softmax(q k^T / sqrt(d)) v in f32 on [bh, s, d], a chunk of heads at a time."""
    bh, s, d = q.shape
    t = k.shape[1]
    out = torch.empty(bh, s, d, device=q.device, dtype=torch.float32)
    chunk = max(1, REFERENCE_BYTES // (s * t * 4))
    mask = torch.ones(s, t, dtype=torch.bool, device=q.device).tril() if causal else None
    for i in range(0, bh, chunk):
        scores = (q[i:i + chunk].float() @ k[i:i + chunk].float().transpose(-1, -2)) * d ** -0.5
        if causal:
            scores.masked_fill_(~mask, float("-inf"))
        out[i:i + chunk] = torch.softmax(scores, dim=-1) @ v[i:i + chunk].float()
        del scores
    return out


def sdpa_anchors(q4, k4, v4, causal, ref):
    """[(name, ms)] and flash's error: SDPA's flash and cuDNN backends on the 4-D views."""
    found, error = [], None
    for name, backend in (("SDPA flash", SDPBackend.FLASH_ATTENTION), ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)
                if name == "SDPA flash":
                    error = rel(out.reshape(ref.shape), ref)
                del out
                found.append((name, bench(lambda: F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal))))
        except Exception as e:  # a backend this GPU or shape lacks: said, not hidden
            print("%s failed: %s" % (name, str(e)[:200]), flush=True)
            if name == "SDPA flash":
                check("SDPA flash anchor", False, str(e)[:200])
    return found, error


def attention_rows(mods, gen):
    for d, causal, seq in ATTENTION:
        batch, heads = TOKENS // seq, WIDTH // d
        bh = batch * heads
        q, k, v = (torch.randn(bh, seq, d, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3))
        ref = attention_reference(q, k, v, causal)
        # The same memory as [batch, heads, s, d]: SDPA's flash kernel needs 4-D.
        q4, k4, v4 = (x.view(batch, heads, seq, d) for x in (q, k, v))
        anchors, e_anchor = sdpa_anchors(q4, k4, v4, causal, ref)
        flops = 4 * bh * seq * seq * d // (2 if causal else 1)
        case = "attention d%d bh=%d s=%d%s" % (d, bh, seq, " causal" if causal else "")
        stem = ("causal_attention%d" if causal else "attention%d") % d
        for target, mod in targets(mods):
            for name, dtype in ((stem, torch.bfloat16), (stem + "_f32", torch.float32)):
                fn = getattr(mod, name)
                out = call(fn, q, k, v)
                row = dict(case=case, target=target, export=name, flops=flops, anchors=anchors,
                           ms=None, error=None, anchor_error=e_anchor)
                rows.append(row)
                if out is None:
                    continue
                row["error"] = e = rel(out, ref)
                check("%s %s %s" % (name, case, target),
                      tuple(out.shape) == (bh, seq, d) and out.dtype == dtype and e < BOUND,
                      "%s %s, weft %.2e, SDPA flash %s from the f32 reference" % (
                          out.dtype, tuple(out.shape), e, "%.2e" % e_anchor if e_anchor is not None else "-"))
                del out
                row["ms"] = bench(lambda: fn(q, k, v))
        del q, k, v, q4, k4, v4, ref
        torch.cuda.empty_cache()


# ---- routing: sizes the stdlib kernels' clauses refuse ----

def routing_checks(mods, gen):
    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=gen).to(torch.bfloat16)

    for target, mod in targets(mods):
        # 192 tokens: not a multiple of 128, so nn's attention takes its parts (two products, a row
        # kernel) and the f32 kernel called by name refuses the call.
        q, k, v = randn(4, 192, 128), randn(4, 192, 128), randn(4, 192, 128)
        for name, causal in (("attention128", False), ("causal_attention128", True)):
            out = call(getattr(mod, name), q, k, v)
            if out is not None:
                e = rel(out, attention_reference(q, k, v, causal))
                check("%s at 192 tokens (the parts) %s" % (name, target), e < BOUND,
                      "weft %.2e from the f32 reference" % e)
        try:
            mod.attention128_f32(q, k, v)
            check("attention128_f32 at 192 tokens %s" % target, False, "no ShapeError")
        except weft.ShapeError as e:
            check("attention128_f32 at 192 tokens %s" % target, "% 128" in str(e), "ShapeError: %s" % e)
        except Exception as e:
            check("attention128_f32 at 192 tokens %s" % target, False, "%s: %s" % (type(e).__name__, str(e)[:300]))
        # 1000 x 1000 x 1000: outside gemm_bf16_bf16's clause, so the generic product.
        a, b = randn(1000, 1000), randn(1000, 1000)
        out = call(mod.gemm, a, b)
        if out is not None:
            e = rel(out, a.float() @ b.float())
            check("gemm at 1000^3 (the generic product) %s" % target, out.shape == (1000, 1000) and e < BOUND,
                  "weft %.2e from the f32 reference" % e)


def table():
    extra = []  # anchors after each row's first (SDPA cuDNN): a ratio column each
    for r in rows:
        for name, _ in r["anchors"][1:]:
            if name not in extra:
                extra.append(name)
    head = ["case", "target", "weft export", "weft ms", "weft TFLOP/s", "anchor", "anchor ms", "anchor TFLOP/s",
            "anchor / weft"] + ["%s / weft" % name for name in extra] + ["error weft", "error anchor"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms = r["ms"]
        first, a = r["anchors"][0] if r["anchors"] else ("-", None)
        cells = [r["case"], r["target"], "`%s`" % r["export"], "%.4f" % ms if ms else "failed",
                 "%.0f" % (r["flops"] / ms / 1e9) if ms else "", first, "%.4f" % a if a else "",
                 "%.0f" % (r["flops"] / a / 1e9) if a else "", "%.2f" % (a / ms) if a and ms else ""]
        others = dict(r["anchors"][1:])
        cells += ["%.2f" % (others[name] / ms) if others.get(name) and ms else "" for name in extra]
        cells += ["%.1e" % r["error"] if r["error"] is not None else "",
                  "%.1e" % r["anchor_error"] if r["anchor_error"] is not None else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("libraries", nargs="+", metavar="LIBRARY")
    parser.add_argument("--only", choices=("gemm", "attention"))
    options = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 references in f32
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    mods = [weft.load(path) for path in options.libraries]
    for path, (target, mod) in zip(options.libraries, targets(mods)):
        print("%s (%s) exports:" % (path, target), [s for _, s in mod.exports()], flush=True)
    gen = torch.Generator(device="cuda").manual_seed(30)

    routing_checks(mods, gen)
    if options.only != "attention":
        gemm_rows(mods, gen)
    if options.only != "gemm":
        attention_rows(mods, gen)

    text = "\n".join(
        ["%s, torch %s, triton %s; weft through the Python package (weft.load), anchors in the same process;"
         " do_bench medians (warm-up 50 ms, 300 ms of calls, L2 flushed); X / weft = X ms / weft ms (above 1: weft"
         " faster); errors ‖out − ref‖ / ‖ref‖ from an f32 reference (error anchor: cuBLAS's bf16 product,"
         " SDPA flash's bf16 output)" % (torch.cuda.get_device_name(), torch.__version__, triton.__version__), ""]
        + table())
    print("\n" + text, flush=True)
    return finish(text, "package.md")


if __name__ == "__main__":
    sys.exit(main())
