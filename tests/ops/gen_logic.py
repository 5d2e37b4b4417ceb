"""Reference cases for the logic ops (ir/ops/logic.cpp); expected values from NumPy."""
import numpy as np

from casegen import Family, rng

f = Family("logic")
r = rng(7)
a = r.random((3, 4)) > 0.5
b = r.random((4,)) > 0.5  # broadcast against a
f.op("logical_not", "logical_not", {"x": a}, np.logical_not(a))
f.op("logical_and", "logical_and", {"a": a, "b": b}, np.logical_and(a, b))
f.op("logical_or", "logical_or", {"a": a, "b": b}, np.logical_or(a, b))
f.op("logical_xor", "logical_xor", {"a": a, "b": b}, np.logical_xor(a, b))
f.op("logical_and_scalar", "logical_and", {"a": a, "b": np.array(True)}, np.logical_and(a, True))

x = r.standard_normal((3, 4)).astype(np.float32)
y = r.standard_normal((3, 1)).astype(np.float32)
y[0, 0] = x[0, 2]  # a tie, where <= and >= are both true
f.op("less_equal", "less_equal", {"a": x, "b": y}, np.less_equal(x, y))
f.op("greater_equal", "greater_equal", {"a": x, "b": y}, np.greater_equal(x, y))
nan = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
other = np.array([1.0, np.nan, np.nan, -np.inf], np.float32)
f.op("less_equal_nan", "less_equal", {"a": nan, "b": other}, np.less_equal(nan, other))
f.op("greater_equal_nan", "greater_equal", {"a": nan, "b": other}, np.greater_equal(nan, other))
i = np.array([[-3, 0, 7], [2, 2, 5]], np.int64)
j = np.array([2, 0, 7], np.int64)
f.op("less_equal_i64", "less_equal", {"a": i, "b": j}, np.less_equal(i, j))
f.op("greater_equal_i32", "greater_equal", {"a": i.astype(np.int32), "b": j.astype(np.int32)},
     np.greater_equal(i, j))
