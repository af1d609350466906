#!/usr/bin/env python3
"""Writes the inputs of the examples (examples/data/*.npy). Run from anywhere:

    python3 examples/data/make_data.py

The files are checked in; this script is how they were made (NumPy, seeded, so rerunning it
rewrites the same bytes).
"""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))

# logits.npy: f32[4, 6], four rows of scores for softmax_file.weft. Row 2 holds large values, which
# softmax handles because it subtracts each row's maximum before `exp`.
rng = np.random.default_rng(2024)
logits = rng.normal(0.0, 2.0, size=(4, 6)).round(2).astype(np.float32)
logits[2] += 100.0
np.save(os.path.join(here, "logits.npy"), logits)
