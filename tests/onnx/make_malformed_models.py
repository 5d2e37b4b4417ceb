"""Writes malformed and unsupported ONNX models into a folder, one file per
way an input can be bad, for tests/lit/onnx/malformed.test (each must give
one clear message and exit status 1, never a crash).

Usage: make_malformed_models.py OUTDIR
Run with Debian's Python (/usr/bin/python3, which has onnx and numpy).
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, initializers=(), opset=13, ir_version=8):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def tensor(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def relu_model(opset=13):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [tensor("x", [2, 3])], [tensor("y", [2, 3])],
                 opset=opset)


def save(out, name, m):
    # Bypasses onnx.save's own checks: these models are wrong on purpose.
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


def external(location, nbytes=16, dims=(4,)):
    """A model whose initializer 'w' lives in external data at `location`."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(dims), data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", "0"), ("length", str(nbytes))):
        e = w.external_data.add()
        e.key, e.value = k, v
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [tensor("x", list(dims))],
                 [tensor("y", list(dims))], [w])


def write_all(out):
    good = relu_model().SerializeToString()
    files = {
        "empty.onnx": b"",
        "truncated.onnx": good[: len(good) // 2],
        "garbage.onnx": bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)),
        "text.onnx": b"this is a text file, not an ONNX model\n" * 4,
        "npy_renamed.onnx": b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" + b" " * 52,
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    no_graph = onnx.ModelProto(ir_version=8)
    no_graph.opset_import.add(domain="", version=13)
    save(out, "no_graph.onnx", no_graph)
    save(out, "opset_too_new.onnx", relu_model(opset=29))
    save(out, "opset_zero.onnx", relu_model(opset=0))
    too_new_ir = relu_model(opset=13)
    too_new_ir.ir_version = 15
    save(out, "ir_too_new.onnx", too_new_ir)

    # Nodes against their schemas at opsets newer than Debian's ONNX library
    # knows (kfuse's own schema table checks them).
    save(out, "unknown_attribute.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=0.5)],
        [tensor("x", [2, 3])], [tensor("y", [2, 3])], opset=20, ir_version=9))
    save(out, "too_many_inputs.onnx", model(
        [helper.make_node("Split", ["x", "s", "x"], ["a", "b"], name="split", axis=1)],
        [tensor("x", [2, 4])], [tensor("a", [2, 2]), tensor("b", [2, 2])],
        [numpy_helper.from_array(np.array([2, 2], np.int64), "s")], opset=20, ir_version=9))
    save(out, "missing_required_attribute.onnx", model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast")],
        [tensor("x", [2])], [tensor("y", [2])], opset=21, ir_version=10))
    save(out, "wrong_attribute_type.onnx", model(
        [helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate=1)],
        [tensor("x", [2])], [tensor("y", [2])], opset=20, ir_version=9))
    save(out, "op_from_later_opset.onnx", model(
        [helper.make_node("Gelu", ["x"], ["y"], name="gelu")],
        [tensor("x", [2])], [tensor("y", [2])], opset=17))

    # Three unsupported ops: all must be named in one message.
    save(out, "unsupported_ops.onnx", model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1),
         helper.make_node("NonZero", ["v"], ["nz"], name="nonzero"),
         helper.make_node("Unique", ["x"], ["u"], name="unique"),
         helper.make_node("Unique", ["v"], ["u2"], name="unique_2")],
        [tensor("x", [2, 3])], [tensor("nz", [2, "n"], TensorProto.INT64), tensor("u", ["m"]), tensor("u2", ["k"])],
        [numpy_helper.from_array(np.array([2], np.int64), "k")]))
    save(out, "custom_domain.onnx", helper.make_model(
        helper.make_graph([helper.make_node("FancyOp", ["x"], ["y"], name="fancy", domain="com.example")], "bad",
                          [tensor("x", [2])], [tensor("y", [2])]),
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]))
    save(out, "unknown_op.onnx", model([helper.make_node("NotAnOnnxOp", ["x"], ["y"], name="mystery")],
                                       [tensor("x", [2])], [tensor("y", [2])]))
    save(out, "missing_initializer.onnx", model(
        [helper.make_node("Conv", ["x", "conv.weight"], ["y"], name="conv")],
        [tensor("x", [1, 1, 4, 4])], [tensor("y", [1, 1, 2, 2])]))
    save(out, "inconsistent_shapes.onnx", model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
        [tensor("a", [2, 3]), tensor("b", [4, 5])], [tensor("y", [2, 3])]))
    save(out, "wrong_output_shape.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [tensor("x", [2, 3])], [tensor("y", [3, 3])]))
    save(out, "bad_reshape.onnx", model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], [tensor("x", [2, 3])],
        [tensor("y", [4, "n"])], [numpy_helper.from_array(np.array([4, -1], np.int64), "shape")]))
    save(out, "gather_out_of_range.onnx", model(
        [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Gather", ["s", "i"], ["d"], name="gather"),
         helper.make_node("Reshape", ["x", "d"], ["y"], name="reshape")],
        [tensor("x", [2, 3])], [tensor("y", ["n"])], [numpy_helper.from_array(np.array([7], np.int64), "i")]))

    # Absurd sizes: element counts that overflow, data that does not match.
    save(out, "huge_input_dims.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [tensor("x", [1 << 40, 1 << 40])], [tensor("y", [1 << 40, 1 << 40])]))
    huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 31, 1 << 31, 1 << 31])
    save(out, "huge_initializer.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                             [tensor("x", [1])], [tensor("y", ["n", "n", "n"])], [huge]))
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0" * 8)
    save(out, "short_raw_data.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                           [tensor("x", [4])], [tensor("y", [4])], [short]))
    save(out, "symbolic_batch.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [tensor("x", ["batch", 3, "width"])],
        [tensor("y", ["batch", 3, "width"])]))

    # External data: only files inside the model's folder may be read.
    os.makedirs(os.path.join(out, "outside"), exist_ok=True)
    with open(os.path.join(out, "outside", "secret.bin"), "wb") as f:
        f.write(b"\0" * 16)
    inner = os.path.join(out, "ext")
    os.makedirs(inner, exist_ok=True)
    with open(os.path.join(inner, "w.bin"), "wb") as f:
        f.write(np.arange(4, dtype=np.float32).tobytes())
    np.save(os.path.join(inner, "x4.npy"), np.ones(4, np.float32))
    link = os.path.join(inner, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "outside", "secret.bin"), link)
    save(inner, "ok.onnx", external("w.bin"))
    save(inner, "dotdot.onnx", external("../outside/secret.bin"))
    save(inner, "absolute.onnx", external(os.path.abspath(os.path.join(out, "outside", "secret.bin"))))
    save(inner, "symlink.onnx", external("link.bin"))
    save(inner, "missing_file.onnx", external("nothere.bin"))
    save(inner, "beyond_end.onnx", external("w.bin", nbytes=64, dims=(16,)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    write_all(out)
