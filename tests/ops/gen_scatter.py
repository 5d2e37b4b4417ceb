"""Reference cases for scatter_nd (ONNX ScatterND semantics: the last axis of
indices holds coordinates into data; reduction none, add, mul, max, min).
Expected values from a plain loop over the updates in order, as ONNX's
reference implementation does (so a repeated coordinate with reduction none
keeps the last update), with NumPy's unbuffered ufunc.at and PyTorch's
scatter/scatter_reduce as second oracles where their semantics match."""
import numpy as np
import torch

from casegen import Family, rng

f = Family("scatter")
r = rng(11)

COMBINE = {
    "none": lambda old, new: new,
    "add": lambda old, new: old + new,
    "mul": lambda old, new: old * new,
    "max": np.maximum,  # NaN-propagating, as np.maximum
    "min": np.minimum,
}


def scatter_nd(data, indices, updates, reduction="none"):
    out = data.copy()
    k = indices.shape[-1]
    for i in np.ndindex(indices.shape[:-1]):
        at = tuple(int(v) for v in indices[i][:k])
        out[at] = COMBINE[reduction](out[at], updates[i])
    return out


def case(name, data, indices, updates, reduction=None, want=None, **tol):
    got = scatter_nd(data, indices, updates, reduction or "none")
    if want is not None:  # a second oracle must agree with the loop
        assert np.array_equal(got, want, equal_nan=True), name
    attrs = {"reduction": reduction} if reduction else None
    f.op(name, "scatter_nd", {"data": data, "indices": indices, "updates": updates}, got, attrs=attrs, **tol)


d53 = r.standard_normal((5, 3)).astype(np.float32)
rows = np.array([[1], [3]], np.int64)
u23 = r.standard_normal((2, 3)).astype(np.float32)
case("scatter_nd_rows", d53, rows, u23)
case("scatter_nd_rows_negative_i32", d53, np.array([[-1], [0]], np.int32), u23)

# Full coordinates: one element each (ScatterElements' form).
d44 = r.standard_normal((4, 4)).astype(np.float32)
coords = np.array([[0, 1], [2, 3], [-1, 0]], np.int64)
u3 = r.standard_normal(3).astype(np.float32)
case("scatter_nd_elements", d44, coords, u3)

# Repeated coordinates: none keeps the last update; the reductions fold all
# of them in order (np.ufunc.at is unbuffered, so it folds every one).
dup = np.array([[1], [3], [1], [-4]], np.int64)  # -4 is row 1 again
u43 = r.standard_normal((4, 3)).astype(np.float32)
case("scatter_nd_duplicates_last_wins", d53, dup, u43)
for red, ufunc in (("add", np.add), ("mul", np.multiply), ("max", np.maximum), ("min", np.minimum)):
    want = d53.copy()
    ufunc.at(want, dup[:, 0], u43)
    case("scatter_nd_duplicates_" + red, d53, dup, u43, red, want)

# max/min propagate NaN, as np.maximum does.
nan_upd = u43.copy()
nan_upd[0, 1] = np.nan
case("scatter_nd_max_nan", d53, dup, nan_upd, "max")

# A coordinate tuple naming a whole slice of a rank-3 tensor, i32 indices.
d234 = r.standard_normal((2, 3, 4)).astype(np.float32)
pairs = np.array([[[0, 2], [1, 0]], [[1, -1], [0, 0]]], np.int32)
u224 = r.standard_normal((2, 2, 4)).astype(np.float32)
case("scatter_nd_slices_rank3", d234, pairs, u224, "add")

# Rank-1 indices: one coordinate tuple, a scalar update.
case("scatter_nd_single_element", d44, np.array([2, -3], np.int64), np.array(7.5, np.float32))
# No coordinates at all (k = 0): every update replaces the whole tensor.
case("scatter_nd_whole_tensor", d44[:2, :3].copy(), np.zeros((2, 0), np.int64),
     r.standard_normal((2, 2, 3)).astype(np.float32))
# No updates: the data passes through.
case("scatter_nd_no_updates", d53, np.zeros((0, 1), np.int64), np.zeros((0, 3), np.float32))

# Other dtypes: integers combine exactly, bools and f16 move as they are.
i53 = r.integers(-9, 9, (5, 3)).astype(np.int64)
iu = r.integers(-9, 9, (4, 3)).astype(np.int64)
want = i53.copy()
np.add.at(want, dup[:, 0], iu)
case("scatter_nd_i64_add", i53, dup, iu, "add", want)
case("scatter_nd_i32_mul", i53.astype(np.int32), dup, iu.astype(np.int32), "mul")
case("scatter_nd_bool", np.zeros((2, 3), np.bool_), np.array([[0, 2], [1, 1]], np.int64), np.array([True, True]))
h = r.standard_normal((5, 3)).astype(np.float16)
case("scatter_nd_f16_add", h, dup, u43.astype(np.float16), "add", rtol=1e-3)

# ScatterElements through coordinates, against torch.scatter / scatter_reduce
# (the ONNX frontend builds these coordinate tuples).
d34 = r.standard_normal((3, 4)).astype(np.float32)
idx = np.array([[3, 0], [1, 1], [2, 3]], np.int64)  # along axis 1
src = r.standard_normal((3, 2)).astype(np.float32)
full = np.stack([np.repeat(np.arange(3)[:, None], 2, 1), idx], -1)
t_data, t_idx, t_src = torch.from_numpy(d34), torch.from_numpy(idx), torch.from_numpy(src)
case("scatter_nd_as_scatter_elements", d34, full, src, None, torch.scatter(t_data, 1, t_idx, t_src).numpy())
case("scatter_nd_as_scatter_elements_sum", d34, full, src, "add",
     t_data.scatter_reduce(1, t_idx, t_src, "sum", include_self=True).numpy())
