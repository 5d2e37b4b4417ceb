"""Writes the weights of the layout lit tests (run with /usr/bin/python3 from
this directory; the output is checked in)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "ops"))
from casegen import write_safetensors  # noqa: E402

rng = np.random.default_rng(0)
f = lambda *s: rng.standard_normal(s).astype(np.float32)
write_safetensors("cnn.safetensors", {
    "w1": f(8, 3, 3, 3), "b1": f(8),
    "scale": f(8), "shift": f(8), "mean": f(8) * 0.1, "var": rng.random(8).astype(np.float32) + 0.5,
    "w2": f(8, 8, 3, 3), "w3": f(4, 8, 1, 1), "bias4": f(1, 8, 1, 1),
})
