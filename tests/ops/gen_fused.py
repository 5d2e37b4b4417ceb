"""Reference cases for the fused op: its body runs like the nodes it holds."""
import numpy as np

from casegen import Family, rng

f = Family("fused")
r = rng(3)
x = r.standard_normal((2, 3)).astype(np.float32)
b = r.standard_normal((3,)).astype(np.float32)
y = np.maximum(x + b, 0)
f.module("add_relu", {"x": x, "b": b}, [y, (y * 2).astype(np.float32)],
         "    %0, %1 = fused @fused_add_relu_scale(%x, %b) : f32[2,3], f32[2,3] {\n"
         "    ^bb(%a: f32[2,3], %bias: f32[3]):\n"
         "      %s = add %a, %bias : f32[2,3]\n"
         "      %r = relu %s : f32[2,3]\n"
         "      %two = constant {value = dense<f32[]>[2.0]} : f32[]\n"
         "      %d = mul %r, %two : f32[2,3]\n"
         "      yield %r, %d\n"
         "    }\n"
         "    return %0, %1\n")
