"""Checks that NumPy reads the .npz files kfuse wrote (npz_test.cpp writes
them, then runs this): check_npz.py FILE.npz... Exit status 0 when every
file holds exactly the expected arrays."""
import sys

import numpy as np

EXPECTED = {
    "a": np.arange(12, dtype=np.float32).reshape(3, 4) / 4,
    "b": np.array([-1, 2 ** 40], dtype=np.int64),
    "c": np.array([True, False, True]),
    "d": np.array(1.5, dtype=np.float16),
    "e": np.zeros((0, 2), dtype=np.float64),
}

for path in sys.argv[1:]:
    with np.load(path) as f:
        if sorted(f.files) != sorted(EXPECTED):
            sys.exit("%s: arrays %s, expected %s" % (path, sorted(f.files), sorted(EXPECTED)))
        for name, want in EXPECTED.items():
            got = f[name]
            if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                sys.exit("%s: array %s is %s %s %r, expected %s %s %r" % (
                    path, name, got.dtype, got.shape, got, want.dtype, want.shape, want))
print("numpy read %d files" % (len(sys.argv) - 1))
