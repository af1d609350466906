#!/usr/bin/env python3
"""Writes a large, valid weft program for the checker benchmark (bench/check/run.sh).

Each block of definitions exercises what the checker spends time on: broadcasting, matrix products,
reshapes that need a `where` clause and Z3, polymorphic calls to earlier definitions, let chains.
Usage: generate.py LINES > program.weft
"""
import sys

TEMPLATE = """\
-- block {i}
def scale{i} (x: 'f[..s, n]) (w: 'f[n]) = x * w + 1.0
def mix{i} (a: f32[b, k]) (m: f32[k, n]) (bias: f32[n]) =
  let h = a @ m in
  let g = scale{i} h bias in
  g - expand (max g)
def heads{i} (x: f32[b, s, d]) where d % 8 == 0 =
  let y = reshape [b, s, 8, d / 8] x in
  transpose y
def norm{i} (x: 'f[..s, n]) =
  let mu = expand (mean x) in
  let c = x - mu in
  c * rsqrt (expand (mean (c * c)) + 1e-5)
def step{i} (x: f32[b, 64]) (m: f32[64, 64]) (v: f32[64]) =
  norm{i} (mix{i} x m v) |> fn y -> y + scale{prev} y v
"""

def main():
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    out = []
    i = 0
    while sum(block.count("\n") for block in out) < lines:
        out.append(TEMPLATE.format(i=i, prev=max(i - 1, 0)))
        i += 1
    sys.stdout.write("".join(out))

if __name__ == "__main__":
    main()
