#!/usr/bin/env python3
"""Models with model-local functions (FunctionProto) for tests/lit/onnx/functions.test.

    make_function_models.py OUT_DIR

functions.onnx: y = LinearAct(LinearAct(x, w1) {alpha=0.2}, w2), where the
function pkg.LinearAct(x, w) {alpha} = LeakyRelu(MatMul(x, w), alpha=@alpha)
calls pkg.Id (a nested function); the second call takes alpha's default
(0.5, in the function's attribute_proto, a field of IR 9 that Debian's onnx
1.12 cannot build, so it is appended to the function's bytes as field 11).
Also the broken ones: a body reading a name it does not define, and a
function calling itself.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def attribute_default(fn, attr):
    """fn with `attr` as its attribute_proto (FunctionProto field 11)."""
    payload = attr.SerializeToString()
    length, n = b"", len(payload)
    while True:
        byte = n & 0x7F
        n >>= 7
        length += bytes([byte | (0x80 if n else 0)])
        if not n:
            break
    out = onnx.FunctionProto()
    out.ParseFromString(fn.SerializeToString() + bytes([11 << 3 | 2]) + length + payload)
    return out


def save(out, name, nodes, functions, inits=()):
    g = helper.make_graph(nodes, "f", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("pkg", 1)],
                          functions=functions, ir_version=8)
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


def main(out):
    os.makedirs(out, exist_ok=True)
    ident = helper.make_function("pkg", "Id", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                                 [helper.make_opsetid("", 13)])
    act = helper.make_node("LeakyRelu", ["m"], ["r"])
    ref = act.attribute.add()
    ref.name, ref.ref_attr_name, ref.type = "alpha", "alpha", onnx.AttributeProto.FLOAT
    linear = helper.make_function("pkg", "LinearAct", ["x", "w"], ["y"],
                                  [helper.make_node("MatMul", ["x", "w"], ["m"]), act,
                                   helper.make_node("Id", ["r"], ["y"], domain="pkg")],
                                  [helper.make_opsetid("", 13), helper.make_opsetid("pkg", 1)], ["alpha"])
    linear = attribute_default(linear, helper.make_attribute("alpha", 0.5))
    w = [numpy_helper.from_array(np.eye(3, dtype=np.float32) * s, f"w{i}") for i, s in ((1, 2.0), (2, -1.0))]
    save(out, "functions.onnx",
         [helper.make_node("LinearAct", ["x", "w1"], ["h"], name="first", domain="pkg", alpha=0.2),
          helper.make_node("LinearAct", ["h", "w2"], ["y"], name="second", domain="pkg")],
         [linear, ident], w)

    leaky = helper.make_function("pkg", "Leaky", ["x"], ["y"], [helper.make_node("Add", ["x", "ghost"], ["y"])],
                                 [helper.make_opsetid("", 13)])
    save(out, "function_reads_undefined.onnx", [helper.make_node("Leaky", ["x"], ["y"], name="call", domain="pkg")],
         [leaky])
    loop = helper.make_function("pkg", "Loop", ["x"], ["y"],
                                [helper.make_node("Loop", ["x"], ["y"], domain="pkg")], [helper.make_opsetid("", 13)])
    save(out, "function_cycle.onnx", [helper.make_node("Loop", ["x"], ["y"], name="call", domain="pkg")], [loop])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
