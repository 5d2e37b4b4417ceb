"""Reference cases for the reduction ops (reduce_sum/mean/max/min/prod, argmax,
softmax, log_softmax); expected values from NumPy (in float64, then cast to
the result dtype) and PyTorch (NaN and tie semantics)."""
import numpy as np
import torch

from casegen import Family, rng

np.seterr(invalid="ignore")  # the NaN/inf cases are intended
f = Family("reduction")
r = rng(7)

x3 = r.standard_normal((2, 3, 4)).astype(np.float32)
x64 = r.standard_normal((3, 5)).astype(np.float64)
i3 = r.integers(-50, 50, (2, 3, 4)).astype(np.int64)


def axis_tag(axes):
    return "all" if not axes else "_".join(("m%d" % -a) if a < 0 else str(a) for a in axes)


def reduce_case(op, fn, name, x, axes=None, keepdims=None, **tol):
    """`fn(x64, axis, keepdims)` computes the expected result in float64 (or
    the integer dtype), cast back to x's dtype."""
    attrs = {}
    if axes is not None:
        attrs["axes"] = axes
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    axis = tuple(axes) if axes else None
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    want = np.asarray(fn(wide, axis=axis, keepdims=bool(keepdims))).astype(x.dtype)
    f.op(name, op, {"x": x}, want, attrs=attrs or None, **tol)


def torch_amax(x, axis, keepdims):
    dims = axis if axis is not None else tuple(range(x.ndim))
    return torch.amax(torch.from_numpy(np.asarray(x)), dim=dims, keepdim=keepdims).numpy()


def torch_amin(x, axis, keepdims):
    dims = axis if axis is not None else tuple(range(x.ndim))
    return torch.amin(torch.from_numpy(np.asarray(x)), dim=dims, keepdim=keepdims).numpy()


REDUCES = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": torch_amax, "reduce_min": torch_amin,
           "reduce_prod": np.prod}
SHORT = {"reduce_sum": "sum", "reduce_mean": "mean", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod"}

# Every reduce over single axes, several axes, all axes, with and without keepdims.
for op, fn in REDUCES.items():
    s = SHORT[op]
    reduce_case(op, fn, s + "_default", x3)
    for axes in ([0], [1], [2], [-1], [-2], [0, 2], [2, -3], [0, 1, 2]):
        for keep in (False, True):
            reduce_case(op, fn, "%s_axes_%s%s" % (s, axis_tag(axes), "_keep" if keep else ""), x3, axes, keep)
    reduce_case(op, fn, s + "_all_keep", x3, [], True)
    reduce_case(op, fn, s + "_f64", x64, [1])
    reduce_case(op, fn, s + "_f64_all_keep", x64, None, True)
    reduce_case(op, fn, s + "_size1_axis", x3[:, :1, :].copy(), [1], False)
    reduce_case(op, fn, s + "_rank0", np.array(2.5, np.float32))
    reduce_case(op, fn, s + "_rank1", x3[0, 0].copy(), [0], True)

# Integer inputs (not for mean, which needs floating point).
for op in ("reduce_sum", "reduce_max", "reduce_min"):
    s = SHORT[op]
    reduce_case(op, REDUCES[op], s + "_i64", i3, [1])
    reduce_case(op, REDUCES[op], s + "_i64_all", i3)
    reduce_case(op, REDUCES[op], s + "_i64_keep", i3, [0, -1], True)
    reduce_case(op, REDUCES[op], s + "_i32", i3.astype(np.int32), [2])
reduce_case("reduce_sum", np.sum, "sum_i64_rank0", np.array(-7, np.int64))
# Products of integers: few factors, so that none overflows.
reduce_case("reduce_prod", np.prod, "prod_i64", i3, [1])
reduce_case("reduce_prod", np.prod, "prod_i32_keep", i3.astype(np.int32), [2], True)

# A mean over many elements: still exact to f32 rounding since the reference
# accumulates in double.
big = r.standard_normal((64, 300)).astype(np.float32) + 3
reduce_case("reduce_mean", np.mean, "mean_many", big, [1], rtol=1e-6)
reduce_case("reduce_mean", np.mean, "mean_many_all", big, rtol=1e-6)
reduce_case("reduce_sum", np.sum, "sum_many_all", big, rtol=1e-6)
# f16: the reference accumulates in double and rounds once.
h = (r.standard_normal((4, 8)) * 4).astype(np.float16)
reduce_case("reduce_sum", np.sum, "sum_f16", h, [1], rtol=1e-3)
reduce_case("reduce_max", torch_amax, "max_f16", h, [0])

# NaN propagates through max/min (torch.amax) and through sum/mean.
nan = np.array([[1.0, np.nan, 3.0], [-1.0, 2.0, 0.5], [np.inf, -np.inf, 1.0]], np.float32)
for op, fn in REDUCES.items():
    reduce_case(op, fn, SHORT[op] + "_nan_inf", nan, [1])
reduce_case("reduce_max", torch_amax, "max_nan_axis0", nan, [0])

# Reducing an axis of extent 0: sum is 0, mean is NaN.
empty = np.zeros((2, 0), np.float32)
reduce_case("reduce_sum", np.sum, "sum_empty_axis", empty, [1])
reduce_case("reduce_prod", np.prod, "prod_empty_axis", empty, [1])
f.op("mean_empty_axis", "reduce_mean", {"x": empty}, torch.mean(torch.from_numpy(empty), dim=1).numpy(),
     attrs={"axes": [1]})

# ---- argmax ----


def argmax_case(name, x, axis=None, keepdims=None):
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    want = torch.argmax(torch.from_numpy(x), dim=-1 if axis is None else axis, keepdim=bool(keepdims)).numpy()
    f.op(name, "argmax", {"x": x}, want.astype(np.int64), attrs=attrs or None)


argmax_case("argmax_default", x3)
for axis in (0, 1, 2, -1, -2, -3):
    argmax_case("argmax_axis_%s" % axis_tag([axis]), x3, axis)
    argmax_case("argmax_axis_%s_keep" % axis_tag([axis]), x3, axis, True)
ties = np.array([[3, 1, 3, 2], [0, 0, 0, 0], [-5, 7, 7, 7]], np.float32)
argmax_case("argmax_ties", ties, 1)
argmax_case("argmax_ties_axis0", np.array([[2, 5], [2, 5], [1, 5]], np.float32), 0, True)
argmax_case("argmax_i64", i3, 1)
argmax_case("argmax_i64_ties", np.array([4, 9, 9, -1], np.int64))
argmax_case("argmax_f64", x64, 0)
argmax_case("argmax_nan", np.array([[1.0, np.nan, 5.0, np.nan], [np.inf, 2.0, np.inf, 0.0],
                                    [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32))
argmax_case("argmax_rank1", x3[1, 2].copy(), 0, True)
argmax_case("argmax_size1_axis", x3[:, :1, :].copy(), 1)

# ---- softmax / log_softmax ----


def softmax_case(op, name, x, axis=None, **tol):
    t = torch.from_numpy(x.astype(np.float64))
    fn = torch.softmax if op == "softmax" else torch.log_softmax
    want = fn(t, dim=-1 if axis is None else axis).numpy().astype(x.dtype)
    f.op(name, op, {"x": x}, want, attrs=None if axis is None else {"axis": axis}, **tol)


large = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1000.5], [0.0, 1000.0, -1000.0]], np.float32)
for op in ("softmax", "log_softmax"):
    softmax_case(op, op + "_default", x3)
    for axis in (0, 1, 2, -1, -2, -3):
        softmax_case(op, "%s_axis_%s" % (op, axis_tag([axis])), x3, axis)
    softmax_case(op, op + "_large", large)
    softmax_case(op, op + "_large_axis0", large, 0)
    softmax_case(op, op + "_f64", x64, 0)
    softmax_case(op, op + "_rank1", (x3[0, 0] * 10).copy())
    softmax_case(op, op + "_size1_axis", x3[:, :1, :].copy(), 1)
    softmax_case(op, op + "_neg_inf", np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]], np.float32))
    softmax_case(op, op + "_nan", np.array([[0.0, np.nan, 1.0], [3.0, 1.0, 2.0]], np.float32))
    softmax_case(op, op + "_f16", (x3 * 3).astype(np.float16), 1, atol=1e-3, rtol=1e-3)
softmax_case("softmax", "softmax_wide", r.standard_normal((4, 500)).astype(np.float32) * 5)


# Gradient-only ops: expected values are torch.autograd's input gradients,
# given dy and the forward result y.
def softmax_grad_case(name, op, shape, axis, seed):
    rg = np.random.default_rng(seed)
    xv = rg.standard_normal(shape)
    dyv = rg.standard_normal(shape)
    fn = torch.softmax if op == "softmax_grad" else torch.log_softmax
    xt = torch.tensor(xv, requires_grad=True)
    yt = fn(xt, axis)
    yt.backward(torch.tensor(dyv))
    f.op(name, op, {"dy": dyv.astype(np.float32), "y": yt.detach().numpy().astype(np.float32)},
              xt.grad.numpy().astype(np.float32), attrs={"axis": axis}, atol=1e-6, rtol=1e-5)


for op in ("softmax_grad", "log_softmax_grad"):
    softmax_grad_case(op, op, (3, 5), -1, 11)
    softmax_grad_case(op + "_axis0", op, (4, 2, 3), 0, 12)
