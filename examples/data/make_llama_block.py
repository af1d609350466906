#!/usr/bin/env python3
"""Writes the inputs of examples/llama_block.weft, a Llama-style block, as .npy files in DIR:

    python3 examples/data/make_llama_block.py DIR [--tokens 2048] [--seed 0]

NumPy only; nothing here is checked in (the weights are 390 MiB). Every tensor is bf16, written as
weft's structured dtype [('bf16', '<u2')] of bit patterns (docs/npy.md), rounded from f32 to
nearest even. Weights are stored [out, in], as PyTorch's nn.Linear stores them:

    x.npy         bf16[tokens, 4096]   the block's input, N(0, 1)
    attn_norm.npy bf16[4096]           RMSNorm's scale before attention, 1 + N(0, 0.1)
    wq.npy wk.npy wv.npy wo.npy
                  bf16[4096, 4096]     N(0, 1 / 4096)
    mlp_norm.npy  bf16[4096]           RMSNorm's scale before the MLP, 1 + N(0, 0.1)
    w1.npy w3.npy bf16[11008, 4096]    SwiGLU's gate and up projections, N(0, 1 / 4096)
    w2.npy        bf16[4096, 11008]    its down projection, N(0, 1 / 11008)

The same seed writes the same bytes. examples/llama_block.weft reads them from the current folder
and wants 2048 tokens (its comment says why a constant); --tokens makes other sizes for other
readers (bench/models/views.py reads any).
"""
import argparse
import os

import numpy as np

D, HIDDEN = 4096, 11008  # model width (32 heads of 128), SwiGLU's hidden width (Llama 2 7B's)
BF16 = np.dtype([("bf16", "<u2")])


def bf16(values):
    """f32 values rounded to nearest even into bf16 bit patterns, as weft's .npy bf16."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return rounded.astype(np.uint16).view(BF16)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    os.makedirs(options.dir, exist_ok=True)
    rng = np.random.default_rng(options.seed)

    def normal(shape, scale):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)

    tensors = [
        ("x", normal((options.tokens, D), 1.0)),
        ("attn_norm", 1 + normal((D,), 0.1)),
        ("wq", normal((D, D), D ** -0.5)),
        ("wk", normal((D, D), D ** -0.5)),
        ("wv", normal((D, D), D ** -0.5)),
        ("wo", normal((D, D), D ** -0.5)),
        ("mlp_norm", 1 + normal((D,), 0.1)),
        ("w1", normal((HIDDEN, D), D ** -0.5)),
        ("w3", normal((HIDDEN, D), D ** -0.5)),
        ("w2", normal((D, HIDDEN), HIDDEN ** -0.5)),
    ]
    for name, values in tensors:
        np.save(os.path.join(options.dir, name + ".npy"), bf16(values))
    print("wrote %d files to %s (%d tokens)" % (len(tensors), options.dir, options.tokens))


if __name__ == "__main__":
    main()
