#!/usr/bin/env python3
"""bench/models: the bars of issue 28 ("Views reach the fast kernels") in one process on one GPU,
weft beside PyTorch eager (bench/models/README.md):

    views.py LIBRARY [--llama EXE DATA] [--one-kernel EXE]

LIBRARY is libllama.so (`weft build --shared bench/models/llama.weft`). For each export, fresh
random bf16 inputs; weft's result and PyTorch eager's are compared with an f32 reference computed
from the same bf16 inputs (‖out − ref‖ / ‖ref‖ under 2e-2, as bench.py; NaN fails), then both are
timed with triton.testing.do_bench (median, milliseconds; weft called through the package as a user
calls it):

  (a) `linear`, x @ transpose w at s = 2048, 4096 x 4096, beside F.linear: bar 0.95x PyTorch.
  (b) `heads_out`, x + reshape [s, 4096] (permute [1, 0, 2] o) @ wo with o: bf16[32, s, 128],
      beside the same in PyTorch (its permute and reshape copy): bar 0.95x.
  (c) `block` (2048 tokens, constant in its type) and `llama` (the token count from x), the
      Llama-style block, beside PyTorch eager (F.rms_norm, F.linear, SDPA, F.silu): bar 1.0x.
      Whether weft's block is causal is read off its result (the reference it is nearer), and
      PyTorch runs the same attention; the table says which.
  --llama EXE DATA: examples/llama_block.weft's executable run in DATA (the .npy files of
      examples/data/make_llama_block.py); its `time`s (the first a warm-up, the median of the
      others) beside PyTorch eager on the same files; its y.npy checked like the rest. Bar (c), 1.0x.
  --one-kernel EXE: bench/models/one_kernel.weft's executable, whose each `time` is one launch of
      llama.weft's `attn` (the stdlib FlashAttention, 256 x 1024, d128); the median `time` beside
      the kernel's own time: the profiler's (CUPTI) of `attn` called through LIBRARY, and nsys's of
      the executable itself when nsys is installed. Bar (d): within 5 us.

Prints PASS/FAIL lines and the tables (also $OUT/views.md when OUT is set). Exits 1 when a check
failed (a wrong result, a missing export, an executable that failed); a missed bar is in the table.
"""

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

import weft

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import BOUND, bench, check, finish, rel  # noqa: E402  (bench/checks.py)

S, D, HEADS, HEAD_DIM, HIDDEN = 2048, 4096, 32, 128, 11008

rows = []  # (bar, case, weft ms, eager ms, bar ratio, error weft, error eager)
notes = []


def export(mod, name):
    try:
        return getattr(mod, name)
    except Exception as e:  # an export the library lacks fails the run, and says so
        check("export %s" % name, False, str(e)[:200])
        return None


# The models in PyTorch, as a PyTorch user writes them; on f32 tensors they are the reference.

def heads_out_torch(x, o, wo):
    s = x.shape[0]
    return x + o.permute(1, 0, 2).reshape(s, D) @ wo


def attention_torch(q, k, v, causal):
    if q.dtype == torch.float32:  # the reference: spelled out, in f32
        scores = (q @ k.transpose(-1, -2)) * HEAD_DIM ** -0.5
        if causal:
            s = q.shape[-2]
            mask = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
    # [b, h, s, d] as PyTorch's models call it: with 3-D [h, s, d] SDPA finds no fused kernel and
    # takes its math path (3.4 ms instead of 0.085 ms at 32 heads x 2048 x 128, causal, on the H200).
    return F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]


def block_torch(causal, x, attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2):
    s = x.shape[0]
    n = F.rms_norm(x, (D,), attn_norm, eps=1e-6)
    q, k, v = (F.linear(n, w).reshape(s, HEADS, HEAD_DIM).permute(1, 0, 2) for w in (wq, wk, wv))
    o = attention_torch(q, k, v, causal)
    h = x + F.linear(o.permute(1, 0, 2).reshape(s, D), wo)
    m = F.rms_norm(h, (D,), mlp_norm, eps=1e-6)
    return h + F.linear(F.silu(F.linear(m, w1)) * F.linear(m, w3), w2)


def block_inputs(randn):
    return [randn(S, D), 1 + randn(D, scale=0.1),
            randn(D, D, scale=D ** -0.5), randn(D, D, scale=D ** -0.5),
            randn(D, D, scale=D ** -0.5), randn(D, D, scale=D ** -0.5),
            1 + randn(D, scale=0.1),
            randn(HIDDEN, D, scale=D ** -0.5), randn(HIDDEN, D, scale=D ** -0.5),
            randn(D, HIDDEN, scale=HIDDEN ** -0.5)]


def check_block(name, ours, inputs):
    """Checks a block's result against both f32 references; returns (causal, error weft, ref)."""
    wide = [t.float() for t in inputs]
    errors = {}
    for causal in (False, True):
        ref = block_torch(causal, *wide)
        errors[causal] = (rel(ours.float(), ref), ref)
    causal = errors[True][0] < errors[False][0]
    error, ref = errors[causal]
    kind = "causal" if causal else "NOT causal"
    check(name, tuple(ours.shape) == tuple(ref.shape) and ours.dtype == torch.bfloat16 and error < BOUND,
          "weft %.2e from the f32 reference (%s attention; %.2e from the %s one)" % (
              error, kind, errors[not causal][0], "non-causal" if causal else "causal"))
    return causal, error, ref


def library_rows(mod, gen):
    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=gen) * scale).to(torch.bfloat16)

    # (a) the linear layer, w stored [out, in].
    linear = export(mod, "linear")
    if linear is not None:
        x, w = randn(S, D), randn(D, D, scale=D ** -0.5)
        ref = F.linear(x.float(), w.float())
        ours, eager = linear(x, w), F.linear(x, w)
        e_ours, e_eager = rel(ours, ref), rel(eager, ref)
        check("linear", ours.shape == ref.shape and ours.dtype == torch.bfloat16 and e_ours < BOUND,
              "weft %.2e, torch eager %.2e from the f32 reference" % (e_ours, e_eager))
        rows.append(("(a) >= 0.95", "linear x @ transpose w, s=%d, %d x %d" % (S, D, D),
                     bench(lambda: linear(x, w)), bench(lambda: F.linear(x, w)), 0.95, e_ours, e_eager))
        del x, w, ref, ours, eager

    # (b) the heads permuted back to rows, projected, and the residual.
    heads_out = export(mod, "heads_out")
    if heads_out is not None:
        x, o, wo = randn(S, D), randn(HEADS, S, HEAD_DIM), randn(D, D, scale=D ** -0.5)
        ref = heads_out_torch(x.float(), o.float(), wo.float())
        ours, eager = heads_out(x, o, wo), heads_out_torch(x, o, wo)
        e_ours, e_eager = rel(ours, ref), rel(eager, ref)
        check("heads_out", ours.shape == ref.shape and ours.dtype == torch.bfloat16 and e_ours < BOUND,
              "weft %.2e, torch eager %.2e from the f32 reference" % (e_ours, e_eager))
        rows.append(("(b) >= 0.95", "x + reshape [s, 4096] (permute [1, 0, 2] o) @ wo, s=%d" % S,
                     bench(lambda: heads_out(x, o, wo)), bench(lambda: heads_out_torch(x, o, wo)), 0.95,
                     e_ours, e_eager))
        del x, o, wo, ref, ours, eager

    # (c) the block through the library: at a constant 2048 tokens, and with the count from x.
    inputs = block_inputs(randn)
    for name, what in (("block", "2048 tokens in its type"), ("llama", "tokens from x")):
        fn = export(mod, name)
        if fn is None:
            continue
        ours = fn(*inputs)
        causal, e_ours, ref = check_block(name, ours, inputs)
        eager = block_torch(causal, *inputs)
        e_eager = rel(eager, ref)
        del ours, ref, eager
        rows.append(("(c) >= 1.0", "Llama block `%s` (%s), s=%d, %s" % (
            name, what, S, "causal" if causal else "NOT causal"),
            bench(lambda: fn(*inputs)), bench(lambda: block_torch(causal, *inputs)), 1.0, e_ours, e_eager))
    del inputs
    torch.cuda.empty_cache()


def run_exe(exe, cwd):
    """The numbers an executable prints, one a line; a failure fails the run."""
    done = subprocess.run([os.path.abspath(exe)], cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        check(os.path.basename(exe), False, "exit %d: %s" % (done.returncode, done.stderr.strip()[-800:]))
        return None
    if done.stderr.strip():
        print("%s stderr: %s" % (exe, done.stderr.strip()[-800:]), flush=True)
    print("%s printed: %s" % (exe, " ".join(done.stdout.split())), flush=True)
    return [float(v) for v in re.findall(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)", done.stdout)]


def load_bf16(path):
    """A bf16 .npy of weft's (docs/npy.md: [('bf16', '<u2')] bit patterns) as a CUDA tensor."""
    bits = np.load(path)
    bits = bits["bf16"] if bits.dtype.names else bits.view(np.uint16)
    return torch.from_numpy(np.ascontiguousarray(bits).view(np.int16)).cuda().view(torch.bfloat16)


def timed_as_program(fn, calls=4):
    """Milliseconds of fn as a weft program's `time` measures a call: two events around it, after the
    call before it (L2 warm, nothing flushed); the median of all calls but the first."""
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times[1:])


def llama_exe_row(exe, data):
    names = ["x", "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w1", "w3", "w2"]
    out_path = os.path.join(data, "y.npy")
    if os.path.exists(out_path):
        os.remove(out_path)
    printed = run_exe(exe, data)
    if printed is None:
        return
    times = printed[:-1]  # the `time`s, then the checksum
    if len(times) < 2 or not os.path.exists(out_path):
        check("llama_block", False, "expected timings and y.npy, got %s" % printed)
        return
    inputs = [load_bf16(os.path.join(data, n + ".npy")) for n in names]
    ours = load_bf16(out_path).reshape(inputs[0].shape)
    causal, e_ours, ref = check_block("llama_block executable", ours, inputs)
    checksum = float((ours.float() * ours.float()).sum())
    check("llama_block checksum", abs(printed[-1] - checksum) <= 1e-3 * abs(checksum),
          "printed %.6g, y.npy's %.6g" % (printed[-1], checksum))
    eager = block_torch(causal, *inputs)
    e_eager = rel(eager, ref)
    del ref, eager, ours
    ms = statistics.median(times[1:])
    notes.append("examples/llama_block: its `time`s %s ms (the first a warm-up; the median of the others in the table)"
                 % ", ".join("%.4f" % t for t in times))
    # Eager timed as the program times itself (like for like): one call between two events, L2 warm,
    # four calls, the median of the last three. (do_bench flushes L2 before each call.)
    rows.append(("(c) >= 1.0", "examples/llama_block executable on %s, s=%d, %s (eager timed as `time` does)" % (
        os.path.basename(os.path.normpath(data)), inputs[0].shape[0], "causal" if causal else "NOT causal"),
        ms, timed_as_program(lambda: block_torch(causal, *inputs)), 1.0, e_ours, e_eager))
    del inputs
    torch.cuda.empty_cache()


def profiled_kernels(fn, calls=20):
    """{kernel name: [microseconds]} of `calls` calls of fn, from the profiler (CUPTI)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if "CUDA" not in str(getattr(e, "device_type", "CUDA")) or "memcpy" in e.name.lower():
            continue  # the host's events; copies
        kernels.setdefault(e.name, []).append(e.time_range.elapsed_us())
    return kernels


def nsys_kernels(exe):
    """{kernel name: [microseconds]} of the executable's own run under nsys, or None without nsys."""
    nsys = shutil.which("nsys")
    if not nsys:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        rep = os.path.join(tmp, "one")
        subprocess.run([nsys, "profile", "--trace=cuda", "--force-overwrite=true", "-o", rep, os.path.abspath(exe)],
                       cwd=tmp, capture_output=True, text=True, timeout=600, check=True)
        for report in ("cuda_gpu_trace", "gputrace"):
            done = subprocess.run([nsys, "stats", "--report", report, "--format", "csv", "--output", "-",
                                   rep + ".nsys-rep"], capture_output=True, text=True, timeout=600)
            lines = [l for l in done.stdout.splitlines() if l.count(",") > 3]
            if done.returncode == 0 and lines:
                break
        else:
            return {}
    table = list(csv.reader(lines))
    head = table[0]
    duration, name = head.index("Duration (ns)"), head.index("Name")
    kernels = {}
    for row in table[1:]:
        kernels.setdefault(row[name], []).append(float(row[duration]) / 1e3)
    return kernels


def one_kernel_rows(mod, exe):
    printed = run_exe(exe, tempfile.mkdtemp())
    if printed is None:
        return []
    times = printed[:-1]
    if len(times) < 2:
        check("one_kernel", False, "expected timings, got %s" % printed)
        return []
    program_us = statistics.median(times[1:]) * 1e3
    notes.append("one_kernel: its `time`s %s us (the first a warm-up; the median of the others below)"
                 % ", ".join("%.1f" % (t * 1e3) for t in times))
    out = []
    attn = export(mod, "attn")
    if attn is not None:
        q, k, v = (torch.rand(256, 1024, HEAD_DIM, device="cuda").to(torch.bfloat16) for _ in range(3))
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        ours = attn(q, k, v)
        check("attn", rel(ours, ref) < BOUND, "weft %.2e from the f32 reference" % rel(ours, ref))
        kernels = profiled_kernels(lambda: attn(q, k, v))
        name = max(kernels, key=lambda n: sum(kernels[n]))
        others = ", ".join("%s %.1f us" % (n, statistics.median(t)) for n, t in kernels.items() if n != name)
        kernel_us = statistics.median(kernels[name])
        out.append(("profiler, `attn` through the library", name, kernel_us, others))
        del q, k, v, ref, ours
    try:
        kernels = nsys_kernels(exe)
    except Exception as e:  # nsys there but failing: said, not hidden
        kernels = {}
        notes.append("nsys failed: %s" % str(e)[:300])
    if kernels is None:
        notes.append("nsys: not on this machine (the executable's own kernels are not traced)")
    elif kernels:
        name = max(kernels, key=lambda n: sum(kernels[n]))
        others = ", ".join("%s x%d %.1f us" % (n, len(t), statistics.median(t)) for n, t in kernels.items()
                           if n != name)
        # The executable launches the kernel 8 times; the first is the warm-up, as for `time`.
        out.append(("nsys, the executable itself", name, statistics.median(kernels[name][1:] or kernels[name]), others))
    return [(source, name, program_us, kernel_us, others) for source, name, kernel_us, others in out]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("--llama", nargs=2, metavar=("EXE", "DATA"))
    parser.add_argument("--one-kernel", metavar="EXE")
    options = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 reference in f32
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    mod = weft.load(options.library)
    print("exports:", [s for _, s in mod.exports()], flush=True)
    gen = torch.Generator(device="cuda").manual_seed(28)

    library_rows(mod, gen)
    if options.llama:
        llama_exe_row(*options.llama)
    one = one_kernel_rows(mod, options.one_kernel) if options.one_kernel else []

    table = ["| bar | case | weft ms | PyTorch eager ms | eager / weft | bar met | error weft | error eager |",
             "|---|---|---|---|---|---|---|---|"]
    for bar, case, t_ours, t_eager, needed, e_ours, e_eager in rows:
        ratio = t_eager / t_ours
        table.append("| %s | %s | %.4f | %.4f | %.3f | %s | %.1e | %.1e |" % (
            bar, case, t_ours, t_eager, ratio, "yes" if ratio >= needed else "**no**", e_ours, e_eager))
    if one:
        table += ["", "| bar | kernel's own time from | kernel | program's `time` us | kernel us | difference us | bar met | other kernels |",
                  "|---|---|---|---|---|---|---|---|"]
        for source, name, program_us, kernel_us, others in one:
            diff = program_us - kernel_us
            table.append("| (d) <= 5 us | %s | %s | %.1f | %.1f | %.1f | %s | %s |" % (
                source, name[:60], program_us, kernel_us, diff, "yes" if diff <= 5.0 else "**no**", others or "none"))
    text = "\n".join(["%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__), ""] + table +
                     ([""] + ["- " + n for n in notes] if notes else []))
    print(text, flush=True)
    return finish(text, "views.md")


if __name__ == "__main__":
    sys.exit(main())
