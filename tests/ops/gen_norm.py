"""Reference cases for the norm ops (batch_norm, batch_norm_train, layer_norm)
and dropout. Norm expectations come from PyTorch in float64, then cast;
dropout's come from an independent Python Philox4x32-10 (below), never from
the C++ code it checks."""
import os

import numpy as np
import torch
import torch.nn.functional as F

from casegen import Family, kir_type, rng

f = Family("norm")
r = rng(7)


def f64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


def cast(t, like):
    return t.numpy().astype(np.asarray(like).dtype)


def typed(a, layout=None):
    return kir_type(a) + ("#" + layout if layout else "")


def layout_module(name, inputs, outputs, op_line, layouts, atol, rtol):
    """A one-op case whose argument and result types carry layout tags, which
    Family.module cannot spell: writes it through Family.module, then tags the
    signature. `layouts` maps argument names and "out<i>" to a layout."""
    f.module(name, inputs, outputs, op_line, atol, rtol)
    path = os.path.join(f.dir, name + ".kir")
    text = open(path).read()
    for arg, a in inputs.items():
        if arg in layouts:
            text = text.replace("%%%s: %s" % (arg, kir_type(a)), "%%%s: %s" % (arg, typed(a, layouts[arg])), 1)
    rets = ", ".join(typed(o, layouts.get("out%d" % i)) for i, o in enumerate(outputs))
    text = text.replace("-> (%s)" % ", ".join(kir_type(o) for o in outputs), "-> (%s)" % rets, 1)
    open(path, "w").write(text)


# ---------------------------------------------------------------- batch_norm
def bn_inputs(x, channels, dtype):
    return {"x": x.astype(dtype),
            "scale": (r.standard_normal(channels) + 1).astype(dtype),
            "bias": r.standard_normal(channels).astype(dtype),
            "mean": r.standard_normal(channels).astype(dtype),
            "var": (r.random(channels) * 2 + 0.05).astype(dtype)}


def bn_expected(ins, eps, channel_axis=1):
    x = f64(ins["x"])
    if channel_axis != 1:
        x = x.movedim(channel_axis, 1)
    y = F.batch_norm(x, f64(ins["mean"]), f64(ins["var"]), f64(ins["scale"]), f64(ins["bias"]),
                     training=False, eps=eps)
    if channel_axis != 1:
        y = y.movedim(1, channel_axis)
    return cast(y, ins["x"])


for name, shape, eps, dtype in [("batch_norm", (2, 3, 4, 5), None, np.float32),
                                ("batch_norm_eps", (2, 3, 4, 5), 0.1, np.float32),
                                ("batch_norm_tiny_var_eps", (2, 3, 2, 2), 1e-3, np.float32),
                                ("batch_norm_rank2", (5, 4), None, np.float32),
                                ("batch_norm_rank3", (2, 3, 6), None, np.float32),
                                ("batch_norm_f64", (2, 3, 4, 5), 1e-4, np.float64)]:
    ins = bn_inputs(r.standard_normal(shape) * 2, shape[1], dtype)
    if name == "batch_norm_tiny_var_eps":
        ins["var"] = np.array([0.0, 1e-6, 1e-3], dtype)  # eps dominates the variance
    attrs = {"epsilon": eps} if eps is not None else None
    tol = 1e-12 if dtype == np.float64 else 1e-5
    f.op(name, "batch_norm", ins, bn_expected(ins, eps if eps is not None else 1e-5), attrs=attrs, atol=tol, rtol=tol)

# NHWC: channels are the last axis in memory; NCHW tagged explicitly as well.
ins = bn_inputs(r.standard_normal((2, 4, 4, 3)), 3, np.float32)
layout_module("batch_norm_nhwc", ins, [bn_expected(ins, 1e-5, channel_axis=3)],
              "    %r0 = batch_norm %x, %scale, %bias, %mean, %var : f32[2,4,4,3]#nhwc\n    return %r0\n",
              {"x": "nhwc", "out0": "nhwc"}, 1e-5, 1e-5)
ins = bn_inputs(r.standard_normal((2, 3, 4, 4)), 3, np.float32)
layout_module("batch_norm_nchw", ins, [bn_expected(ins, 0.01)],
              "    %r0 = batch_norm %x, %scale, %bias, %mean, %var {epsilon = 0.01} : f32[2,3,4,4]#nchw\n"
              "    return %r0\n", {"x": "nchw", "out0": "nchw"}, 1e-5, 1e-5)


# ---------------------------------------------------------- batch_norm_train
def bn_train_expected(x, scale, bias, eps, channel_axis=1):
    t = f64(x)
    if channel_axis != 1:
        t = t.movedim(channel_axis, 1)
    dims = [d for d in range(t.dim()) if d != 1]
    y = F.batch_norm(t, None, None, f64(scale), f64(bias), training=True, eps=eps)
    if channel_axis != 1:
        y = y.movedim(1, channel_axis)
    mean = t.mean(dim=dims)
    var = t.var(dim=dims, unbiased=False)  # biased: what normalisation uses
    return [cast(y, x), cast(mean, x), cast(var, x)]


for name, shape, eps, dtype in [("batch_norm_train", (4, 3, 5, 5), None, np.float32),
                                ("batch_norm_train_eps", (4, 3, 5, 5), 0.5, np.float32),
                                ("batch_norm_train_rank2", (8, 5), None, np.float32),
                                ("batch_norm_train_f64", (3, 2, 4, 3), 1e-3, np.float64)]:
    x = (r.standard_normal(shape) * 3 + 1.5).astype(dtype)
    scale = (r.standard_normal(shape[1]) + 1).astype(dtype)
    bias = r.standard_normal(shape[1]).astype(dtype)
    attrs = {"epsilon": eps} if eps is not None else None
    tol = 1e-12 if dtype == np.float64 else 1e-5
    f.op(name, "batch_norm_train", {"x": x, "scale": scale, "bias": bias},
         bn_train_expected(x, scale, bias, eps if eps is not None else 1e-5), attrs=attrs, atol=tol, rtol=tol)

x = (r.standard_normal((2, 3, 3, 4)) * 2 - 1).astype(np.float32)
scale = (r.standard_normal(4) + 1).astype(np.float32)
bias = r.standard_normal(4).astype(np.float32)
outs = bn_train_expected(x, scale, bias, 1e-5, channel_axis=3)
layout_module("batch_norm_train_nhwc", {"x": x, "scale": scale, "bias": bias}, outs,
              "    %r0, %r1, %r2 = batch_norm_train %x, %scale, %bias : f32[2,3,3,4]#nhwc, f32[4], f32[4]\n"
              "    return %r0, %r1, %r2\n", {"x": "nhwc", "out0": "nhwc"}, 1e-5, 1e-5)


# ---------------------------------------------------------------- layer_norm
def ln_case(name, x, axis, with_scale, with_bias, eps=None):
    normalized = x.shape[axis:] if axis is not None else x.shape[-1:]
    ins = {"x": x}
    if with_scale:
        ins["scale"] = (r.standard_normal(normalized) + 1).astype(x.dtype)
    if with_bias:
        ins["bias"] = r.standard_normal(normalized).astype(x.dtype)
    y = F.layer_norm(f64(x), tuple(normalized), f64(ins["scale"]) if with_scale else None,
                     f64(ins["bias"]) if with_bias else None, eps=eps if eps is not None else 1e-5)
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if eps is not None:
        attrs["epsilon"] = eps
    tol = 1e-12 if x.dtype == np.float64 else 1e-5
    f.op(name, "layer_norm", ins, cast(y, x), attrs=attrs or None, atol=tol, rtol=tol)


x3 = (r.standard_normal((2, 3, 8)) * 2 + 0.5).astype(np.float32)
ln_case("layer_norm", x3, None, True, True)
ln_case("layer_norm_no_affine", x3, None, False, False)
ln_case("layer_norm_scale_only", x3, None, True, False)
ln_case("layer_norm_last2", x3, -2, True, True)
ln_case("layer_norm_last2_positive_axis", x3, 1, False, False)
ln_case("layer_norm_last2_scale_only", x3, -2, True, False, eps=1e-3)
ln_case("layer_norm_all_axes", x3, 0, True, True)
ln_case("layer_norm_eps", x3, None, True, True, eps=0.25)
ln_case("layer_norm_rank1", x3[0, 0].copy(), None, True, True)
ln_case("layer_norm_constant_rows", np.full((3, 4), 2.5, np.float32), None, True, True)  # variance 0
ln_case("layer_norm_f64", x3.astype(np.float64), -2, True, True)


# ------------------------------------------------------------------- dropout
# Philox4x32-10 (Salmon et al. 2011) written out independently of ir/philox.h.
MASK32 = 0xFFFFFFFF
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for rnd in range(10):
        if rnd > 0:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK32, p1 & MASK32, ((p0 >> 32) ^ c3 ^ k1) & MASK32, p0 & MASK32
    return [c0, c1, c2, c3]


# The Random123 known-answer vectors, so that this oracle is itself checked.
assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
assert philox4x32_10([MASK32] * 4, [MASK32] * 2) == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
assert philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]) == \
    [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]


def dropout_keep(seed, step, index, ratio):
    s, t, i = seed & (2**64 - 1), step & (2**64 - 1), index & (2**64 - 1)
    u = philox4x32_10([i & MASK32, i >> 32, t & MASK32, t >> 32], [s & MASK32, s >> 32])[0]
    return (u >> 8) * 2.0**-24 >= ratio


def dropout_expected(x, seed, step, ratio):
    flat = x.reshape(-1).astype(np.float64)
    y = np.array([v / (1 - ratio) if dropout_keep(seed, step, i, ratio) else 0.0 for i, v in enumerate(flat)])
    return y.reshape(x.shape).astype(x.dtype)


def dropout_case(name, x, seed=None, step=None, ratio=None, mask=False):
    ins = {"x": x}
    if step is not None:
        ins["step"] = np.array(step, np.int64)
    attrs = {}
    if ratio is not None:
        attrs["ratio"] = ratio
    if seed is not None:
        attrs["seed"] = seed
    want = dropout_expected(x, seed or 0, step or 0, 0.5 if ratio is None else ratio)
    tol = 1e-15 if x.dtype == np.float64 else 1e-7
    if mask:  # the second result: where y is kept (x has no zeros here)
        attrs["mask"] = True
        assert np.all(x != 0)
        want = [want, want != 0]
    f.op(name, "dropout", ins, want, attrs=attrs or None, atol=tol, rtol=tol)


xd = r.standard_normal((4, 8, 16)).astype(np.float32)
big_seed = 0x1234_5678_9ABC  # high key word non-zero
dropout_case("dropout_defaults", xd)
dropout_case("dropout_seed0_step0", xd, seed=0, step=0, ratio=0.3)
dropout_case("dropout_seed0_step7", xd, seed=0, step=7, ratio=0.3)
dropout_case("dropout_bigseed_step0", xd, seed=big_seed, step=0, ratio=0.3)
dropout_case("dropout_bigseed_step7", xd, seed=big_seed, step=7, ratio=0.3)
dropout_case("dropout_high_step", xd, seed=42, step=2**33 + 5, ratio=0.5)  # high counter word non-zero
dropout_case("dropout_negative_seed", xd, seed=-3, step=1, ratio=0.25)  # two's-complement key
dropout_case("dropout_ratio_zero_identity", xd, seed=5, step=3, ratio=0.0)
dropout_case("dropout_high_ratio", xd, seed=9, ratio=0.9)
dropout_case("dropout_f64", xd.astype(np.float64), seed=11, step=2, ratio=0.1)
dropout_case("dropout_mask", xd, seed=big_seed, step=7, ratio=0.3, mask=True)
# Masks must differ between steps and seeds, or the cases above prove little.
masks = [dropout_expected(np.ones(512, np.float32), s, t, 0.3) != 0 for s in (0, big_seed) for t in (0, 7)]
assert all((a != b).any() for i, a in enumerate(masks) for b in masks[i + 1:])


# ----------------------------------------------------- batch_norm_train_grad
# batch_norm_train_grad(dy, x, scale, batch_mean, batch_var) -> (dx, dscale,
# dbias): torch.autograd's gradients of training-mode batch norm in float64.
def bn_train_grad_case(name, shape, eps=None, dtype=np.float32, channel_axis=1, layout=None):
    c = shape[channel_axis]
    x = (r.standard_normal(shape) * 2 + 0.5).astype(dtype)
    scale = (r.standard_normal(c) + 1).astype(dtype)
    bias = r.standard_normal(c).astype(dtype)
    dy = r.standard_normal(shape).astype(dtype)
    xt, wt, bt = (f64(a).requires_grad_() for a in (x, scale, bias))
    _, mean, var = bn_train_expected(x, scale, bias, eps if eps is not None else 1e-5, channel_axis)
    t = xt.movedim(channel_axis, 1) if channel_axis != 1 else xt
    y = F.batch_norm(t, None, None, wt, bt, training=True, eps=eps if eps is not None else 1e-5)
    y.backward(f64(dy).movedim(channel_axis, 1) if channel_axis != 1 else f64(dy))
    outs = [cast(xt.grad, x), cast(wt.grad, x), cast(bt.grad, x)]
    tol = 1e-12 if dtype == np.float64 else 1e-5
    layouts = {"dy": layout, "x": layout, "out0": layout} if layout else None
    f.op(name, "batch_norm_train_grad", {"dy": dy, "x": x, "scale": scale, "batch_mean": mean, "batch_var": var},
         outs, attrs={"epsilon": eps} if eps is not None else None, atol=tol, rtol=tol, layouts=layouts)


bn_train_grad_case("batch_norm_train_grad", (4, 3, 5, 5))
bn_train_grad_case("batch_norm_train_grad_eps", (4, 3, 3, 3), eps=0.5)
bn_train_grad_case("batch_norm_train_grad_rank2", (8, 5))
bn_train_grad_case("batch_norm_train_grad_rank3", (3, 4, 5))
bn_train_grad_case("batch_norm_train_grad_nhwc", (2, 3, 3, 4), channel_axis=3, layout="nhwc")
bn_train_grad_case("batch_norm_train_grad_f64", (3, 2, 4, 3), eps=1e-3, dtype=np.float64)


# ----------------------------------------------------------- layer_norm_grad
# layer_norm_grad(dy, x[, scale]) -> dx: torch.autograd's gradient of
# F.layer_norm in float64 (the scale's and bias's gradients are reduce_sums
# the gradient rule builds, checked by the gradient checks).
def ln_grad_case(name, x, axis, with_scale, eps=None, tol=None):
    normalized = x.shape[axis:] if axis is not None else x.shape[-1:]
    ins = {"dy": r.standard_normal(x.shape).astype(x.dtype), "x": x}
    xt = f64(x).requires_grad_()
    wt = bt = None
    if with_scale:
        ins["scale"] = (r.standard_normal(normalized) + 1).astype(x.dtype)
        wt = f64(ins["scale"]).requires_grad_()
        bt = f64(r.standard_normal(normalized)).requires_grad_()
    y = F.layer_norm(xt, tuple(normalized), wt, bt, eps=eps if eps is not None else 1e-5)
    y.backward(f64(ins["dy"]))
    outs = [cast(xt.grad, x)]
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if eps is not None:
        attrs["epsilon"] = eps
    tol = tol or (1e-12 if x.dtype == np.float64 else 1e-5)
    f.op(name, "layer_norm_grad", ins, outs, attrs=attrs or None, atol=tol, rtol=tol)


ln_grad_case("layer_norm_grad", x3, None, True)
ln_grad_case("layer_norm_grad_no_scale", x3, None, False)
ln_grad_case("layer_norm_grad_last2", x3, -2, True)
ln_grad_case("layer_norm_grad_last2_no_scale", x3, 1, False, eps=1e-3)
ln_grad_case("layer_norm_grad_all_axes", x3, 0, True)
ln_grad_case("layer_norm_grad_eps", x3, None, True, eps=0.25)
ln_grad_case("layer_norm_grad_rank1", x3[0, 0].copy(), None, True)
# Variance 0: rstd = 1/sqrt(eps) ~ 316 multiplies f32 rounding of the
# difference it scales (measured 7e-5 in the cpu kernel's f32).
ln_grad_case("layer_norm_grad_constant_rows", np.full((3, 4), 2.5, np.float32), None, True, tol=5e-4)
ln_grad_case("layer_norm_grad_f64", x3.astype(np.float64), -2, True)
