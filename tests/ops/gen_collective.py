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
# ZeRO-1's, over one rank: the shard is the whole tensor, flattened.
f.op("reduce_scatter_one_rank", "reduce_scatter", {"a": a}, a.ravel(), attrs={"ranks": 1, "bucket": 1})
f.op("shard_one_rank", "shard", {"c": c}, c.ravel(), attrs={"ranks": 1})
f.op("all_gather_one_rank", "all_gather", {"b": b}, b.reshape(5, 1), attrs={"ranks": 1, "shape": [5, 1], "bucket": 2})
