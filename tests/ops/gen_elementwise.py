"""Reference cases for the elementwise ops; expected values from NumPy/PyTorch."""
import math

import numpy as np
import torch

from casegen import Family, rng

f = Family("elementwise")
r = rng(1)
x = r.standard_normal((3, 4)).astype(np.float32) * 2
pos = (r.random((3, 4)) * 3 + 0.1).astype(np.float32)
t = torch.from_numpy(x)

unary = {
    "neg": -x, "abs": np.abs(x), "exp": np.exp(x), "tanh": np.tanh(x),
    "sigmoid": torch.sigmoid(t).numpy(), "relu": np.maximum(x, 0),
    "erf": torch.erf(t).numpy(), "sin": np.sin(x), "cos": np.cos(x), "sign": np.sign(x),
    "floor": np.floor(x), "ceil": np.ceil(x), "identity": x,
    "gelu": torch.nn.functional.gelu(t).numpy(),
    "softplus": torch.nn.functional.softplus(t).numpy(),
}
for op, want in unary.items():
    f.op(op, op, {"x": x}, want.astype(np.float32), atol=1e-6, rtol=1e-5)
for op, fn in {"log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v), "reciprocal": lambda v: 1 / v}.items():
    f.op(op, op, {"x": pos}, fn(pos.astype(np.float64)).astype(np.float32), rtol=1e-6)

f.op("gelu_tanh", "gelu", {"x": x}, torch.nn.functional.gelu(t, approximate="tanh").numpy(),
     attrs={"approximate": "tanh"}, rtol=1e-5)
f.op("leaky_relu", "leaky_relu", {"x": x}, torch.nn.functional.leaky_relu(t, 0.2).numpy(), attrs={"alpha": 0.2})
f.op("elu", "elu", {"x": x}, torch.nn.functional.elu(t, 0.7).numpy(), attrs={"alpha": 0.7}, rtol=1e-5)
big = np.array([-30, -1, 0, 1, 15, 25, 100], np.float32)
f.op("softplus_threshold", "softplus", {"x": big},
     torch.nn.functional.softplus(torch.from_numpy(big), beta=2, threshold=20).numpy(),
     attrs={"beta": 2.0, "threshold": 20.0}, rtol=1e-6)
f.op("clip", "clip", {"x": x}, np.clip(x, -0.5, 1.25), attrs={"min": -0.5, "max": 1.25})
f.op("clip_min_only", "clip", {"x": x}, np.maximum(x, 0.3), attrs={"min": 0.3})
ints = np.array([[-3, 0, 7], [2, -8, 5]], np.int64)
f.op("clip_i64", "clip", {"x": ints}, np.clip(ints, -2, 4), attrs={"min": -2.0, "max": 4.0})
f.op("relu_i64", "relu", {"x": ints}, np.maximum(ints, 0))
f.op("neg_i32", "neg", {"x": ints.astype(np.int32)}, -ints.astype(np.int32))
f.op("abs_f64", "abs", {"x": x.astype(np.float64)}, np.abs(x.astype(np.float64)))
f.op("sign_zero", "sign", {"x": np.array([-2.0, 0.0, 3.0], np.float32)}, np.array([-1, 0, 1], np.float32))
# round: halves to even (torch.round); beyond 2^23 (f32) and 2^52 (f64) every
# value is an integer already, where floor(x + 0.5) would be wrong.
halves = [-2.5, -1.5, -0.5, -0.4, 0.0, 0.4, 0.5, 0.6, 1.5, 2.5, 3.7, -3.7, 1e30, np.inf, -np.inf, np.nan]
h32 = np.array(halves + [8388609.0, -8388609.0, 8388607.5], np.float32)
h64 = np.array(halves + [2.0**52 + 1, 2.0**52 - 0.5, 4503599627370495.5], np.float64)
f.op("round", "round", {"x": x}, torch.round(t).numpy())
f.op("round_halves", "round", {"x": h32}, torch.round(torch.from_numpy(h32)).numpy())
f.op("round_f64", "round", {"x": h64}, torch.round(torch.from_numpy(h64)).numpy())
f.op("round_f16", "round", {"x": h32[:12].astype(np.float16)}, np.round(h32[:12].astype(np.float16)))

# Binary ops with broadcasting.
a = r.standard_normal((2, 3, 4)).astype(np.float32)
b = r.standard_normal((3, 1)).astype(np.float32)
for op, fn in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
               "minimum": np.minimum}.items():
    f.op(op, op, {"a": a, "b": b}, fn(a, b))
f.op("div", "div", {"a": a, "b": b}, (a.astype(np.float64) / b).astype(np.float32), rtol=1e-6)
f.op("pow", "pow", {"a": np.abs(a) + 0.5, "b": b}, np.power(np.abs(a) + 0.5, b.astype(np.float64)).astype(np.float32),
     rtol=1e-5)
f.op("add_scalar", "add", {"a": a, "b": np.array(2.5, np.float32)}, a + np.float32(2.5))
f.op("add_both_broadcast", "add", {"a": np.ones((4, 1), np.float32), "b": np.arange(3, dtype=np.float32)},
     np.ones((4, 1), np.float32) + np.arange(3, dtype=np.float32))
ia = np.array([7, -7, 9, 0], np.int64)
ib = np.array([2, 2, -4, 3], np.int64)
f.op("div_i64_truncates", "div", {"a": ia, "b": ib}, np.trunc(ia / ib).astype(np.int64))
f.op("add_i32", "add", {"a": ia.astype(np.int32), "b": ib.astype(np.int32)}, (ia + ib).astype(np.int32))
nan = np.array([np.nan, 1.0, -1.0], np.float32)
f.op("maximum_nan", "maximum", {"a": nan, "b": np.zeros(3, np.float32)},
     torch.maximum(torch.from_numpy(nan), torch.zeros(3)).numpy())

for op, fn in {"equal": np.equal, "less": np.less, "greater": np.greater}.items():
    ra = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    rb = np.array([2, 2, 7], np.float32)
    f.op(op, op, {"a": ra, "b": rb}, fn(ra, rb))
f.op("equal_bool", "equal", {"a": np.array([True, False]), "b": np.array([True, True])}, np.array([True, False]))

cond = r.random((2, 3)) > 0.5
f.op("where", "where", {"c": cond, "a": x[:2, :3].copy(), "b": np.array([[-1.0]], np.float32)},
     np.where(cond, x[:2, :3], np.float32(-1.0)))

f.op("cast_f32_to_i64", "cast", {"x": x}, np.trunc(x).astype(np.int64), attrs={"to": "i64"})
f.op("cast_i64_to_f32", "cast", {"x": ints}, ints.astype(np.float32), attrs={"to": "f32"})
f.op("cast_f32_to_f16", "cast", {"x": x}, x.astype(np.float16), attrs={"to": "f16"})
f.op("cast_f32_to_bool", "cast", {"x": np.array([0.0, -0.5, 2.0], np.float32)}, np.array([False, True, True]),
     attrs={"to": "bool"})
f.op("cast_f16_to_f64", "cast", {"x": x.astype(np.float16)}, x.astype(np.float16).astype(np.float64),
     attrs={"to": "f64"})
f.op("f16_relu", "relu", {"x": x.astype(np.float16)}, np.maximum(x.astype(np.float16), np.float16(0)))

f.op("constant", "constant", {}, np.array([[1.5, -2.0], [0.25, 8.0]], np.float32),
     attrs={"value": np.array([[1.5, -2.0], [0.25, 8.0]], np.float32)})

# A chain: gelu(x * w + b), checked end to end.
w = r.standard_normal((4,)).astype(np.float32)
bb = r.standard_normal((4,)).astype(np.float32)
y = torch.nn.functional.gelu(torch.from_numpy(x * w + bb)).numpy()
f.module("chain_mul_add_gelu", {"x": x, "w": w, "b": bb}, [y],
         "    %0 = mul %x, %w : f32[3,4]\n    %1 = add %0, %b : f32[3,4]\n"
         "    %2 = gelu %1 : f32[3,4]\n    return %2\n", rtol=1e-5)

# Gradient-only ops: the expected values are torch.autograd's input
# gradients of the forward activation.
def autograd_input_grad(fn, xv, dyv):
    xt = torch.tensor(xv.astype(np.float64), requires_grad=True)
    fn(xt).backward(torch.tensor(dyv.astype(np.float64)))
    return xt.grad.numpy()


dy = r.standard_normal((3, 4)).astype(np.float32)
xk = x.copy()
xk[0, 0] = 0.0  # relu_grad at the kink: torch gives 0
f.op("relu_grad", "relu_grad", {"dy": dy, "x": xk},
     autograd_input_grad(torch.relu, xk, dy).astype(np.float32))
f.op("gelu_grad", "gelu_grad", {"dy": dy, "x": x},
     autograd_input_grad(torch.nn.functional.gelu, x, dy).astype(np.float32), rtol=1e-5)
f.op("gelu_grad_tanh", "gelu_grad", {"dy": dy, "x": x},
     autograd_input_grad(lambda v: torch.nn.functional.gelu(v, approximate="tanh"), x, dy).astype(np.float32),
     attrs={"approximate": "tanh"}, rtol=1e-5)
ys = torch.sigmoid(torch.from_numpy(x).double()).numpy()
f.op("sigmoid_grad", "sigmoid_grad", {"dy": dy, "y": ys.astype(np.float32)},
     autograd_input_grad(torch.sigmoid, x, dy).astype(np.float32), rtol=1e-5)
yt = np.tanh(x.astype(np.float64))
f.op("tanh_grad", "tanh_grad", {"dy": dy, "y": yt.astype(np.float32)},
     autograd_input_grad(torch.tanh, x, dy).astype(np.float32), atol=1e-6, rtol=1e-5)
