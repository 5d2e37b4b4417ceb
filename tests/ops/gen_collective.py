"""Reference cases for the collectives. A case runs as rank 0 of a world of
one, where the mean over the ranks is each value itself; exchanges between
ranks are tested by tests/unit/data_parallel_test.cpp and
tests/training/check_data_parallel.py."""
import numpy as np

from casegen import Family, rng

f = Family("collective")
r = rng(11)

a = r.standard_normal((3, 4)).astype(np.float32)
b = r.standard_normal(5).astype(np.float32)
f.op("all_reduce_one_rank", "all_reduce", {"a": a}, a)
f.op("all_reduce_bucket", "all_reduce", {"a": a, "b": b}, [a, b], attrs={"bucket": 3})
c = r.standard_normal((2, 3)).astype(np.float64)
f.op("all_reduce_f64", "all_reduce", {"c": c}, c)
