"""Writes the small binary inputs the lit tests use (run with /usr/bin/python3
from this directory; the outputs are checked in)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops"))
from casegen import write_safetensors  # noqa: E402

write_safetensors("w2.safetensors", {"w": np.array([0.5, -2.0], np.float32)})
# Exponents an exporter keeps as initializers (passes/canonicalize_pow.kir).
write_safetensors("exponents.safetensors", {name: np.array(v, np.float32) for name, v in
                                            [("one", 1.0), ("two", 2.0), ("three", 3.0), ("cube", 3.0), ("half", 0.5)]})
good = open("w2.safetensors", "rb").read()
open("truncated.safetensors", "wb").write(good[:-3])
open("garbage.safetensors", "wb").write(b"this is not a weights file at all")
np.save("x23.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
np.save("x23_i64.npy", np.arange(6, dtype=np.int64).reshape(2, 3))
np.save("x32.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
open("bad.npy", "wb").write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
np.save("x2.npy", np.array([3, -1], np.float32))
