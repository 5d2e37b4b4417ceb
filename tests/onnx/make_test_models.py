"""Writes small valid ONNX models (and input files) for the lit tests under
tests/lit/onnx/, built with onnx.helper so that each exercises one feature
of the importer exactly.

Usage: make_test_models.py OUTDIR
Run with Debian's Python (/usr/bin/python3, which has onnx and numpy).
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tensor(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, initializers=(), opset=13, name="test"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def gemm_relu():
    """Gemm with alpha, beta, transB and C, then Relu: named nodes."""
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    return model([helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], name="/fc/Gemm", alpha=0.5,
                                   beta=2.0, transB=1),
                  helper.make_node("Relu", ["h"], ["y"], name="/relu/Relu")],
                 [tensor("x", [2, 4])], [tensor("y", [2, 3])],
                 [init("fc.weight", w), init("fc.bias", np.array([-1, 0, 1], np.float32))], name="gemm_relu")


def shape_subgraph():
    """Reshape to [batch, -1] with the batch taken from Shape(x), as
    exporters write it for a dynamic batch."""
    return model([helper.make_node("Shape", ["x"], ["s"], name="/Shape"),
                  helper.make_node("Gather", ["s", "zero"], ["b"], name="/Gather", axis=0),
                  helper.make_node("Unsqueeze", ["b", "axes"], ["b1"], name="/Unsqueeze"),
                  helper.make_node("Concat", ["b1", "minus1"], ["shape"], name="/Concat", axis=0),
                  helper.make_node("Reshape", ["x", "shape"], ["flat"], name="/Reshape"),
                  helper.make_node("Relu", ["flat"], ["y"], name="/Relu")],
                 [tensor("x", ["batch", 3, 4])], [tensor("y", ["batch", 12])],
                 [init("zero", np.array(0, np.int64)), init("axes", np.array([0], np.int64)),
                  init("minus1", np.array([-1], np.int64))], name="shape_subgraph")


def batchnorm():
    """BatchNormalization: its running statistics become buffers; an
    initializer listed among the graph inputs (IR version 3 style) is a
    parameter, not an argument."""
    c = 2
    inits = [init("bn.weight", np.array([1.0, 2.0], np.float32)), init("bn.bias", np.array([0.5, -0.5], np.float32)),
             init("bn.running_mean", np.array([0.1, 0.2], np.float32)),
             init("bn.running_var", np.array([1.5, 0.5], np.float32))]
    return model([helper.make_node("BatchNormalization", ["x", "bn.weight", "bn.bias", "bn.running_mean",
                                                          "bn.running_var"], ["y"], name="/bn/BatchNormalization",
                                   epsilon=1e-5)],
                 [tensor("x", [1, c, 2, 2]), tensor("bn.weight", [c])], [tensor("y", [1, c, 2, 2])], inits,
                 name="batchnorm")


def passthrough():
    """Outputs that are a graph input (through Identity) and a constant, and
    two outputs of one Split: each output keeps its own name."""
    return model([helper.make_node("Identity", ["x"], ["same"], name="/Identity"),
                  helper.make_node("Constant", [], ["c"], name="/Constant",
                                   value=numpy_helper.from_array(np.array([1.5, 2.5], np.float32))),
                  helper.make_node("Split", ["x"], ["left", "right"], name="/Split", axis=1)],
                 [tensor("x", [2, 4])], [tensor("same", [2, 4]), tensor("c", [2]), tensor("left", [2, 2]),
                                         tensor("right", [2, 2])], name="passthrough")


def softmax_versions():
    """Softmax over [2, 3, 4] at axis 1: at opset 11 over axes 1 and 2
    together, at opset 13 over axis 1 alone."""
    node = lambda: helper.make_node("Softmax", ["x"], ["y"], name="/Softmax", axis=1)
    return {v: model([node()], [tensor("x", [2, 3, 4])], [tensor("y", [2, 3, 4])], opset=v, name="softmax%d" % v)
            for v in (11, 13)}


def backend_tests(out, gemm):
    """ONNX backend-test folders for kfuse test-onnx: one that passes, one
    whose expected output is wrong, one using an unsupported op."""
    x = np.array([[1, -2, 3, -4], [0.5, 0.25, -1, 2]], np.float32)
    w = numpy_helper.to_array(gemm.graph.initializer[0])
    b = numpy_helper.to_array(gemm.graph.initializer[1])
    y = np.maximum(0.5 * x @ w.T + 2 * b, 0).astype(np.float32)
    wrong = y.copy()
    wrong[1, 2] += 0.5
    topk = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="/TopK")], [tensor("x", [2, 4])],
                 [tensor("v", [2, 2]), tensor("i", [2, 2], TensorProto.INT64)],
                 [init("k", np.array([2], np.int64))], opset=11)
    for name, m, want in (("test_gemm_pass", gemm, y), ("test_gemm_wrong", gemm, wrong),
                          ("test_topk_skip", topk, y)):
        data = os.path.join(out, name, "test_data_set_0")
        os.makedirs(data)
        with open(os.path.join(out, name, "model.onnx"), "wb") as f:
            f.write(m.SerializeToString())
        for file, array in (("input_0.pb", x), ("output_0.pb", want)):
            with open(os.path.join(data, file), "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())


def write_all(out):
    models = {"gemm_relu": gemm_relu(), "shape_subgraph": shape_subgraph(), "batchnorm": batchnorm(),
              "passthrough": passthrough()}
    for v, m in softmax_versions().items():
        models["softmax_opset%d" % v] = m
    for name, m in models.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
    x = np.array([[1, -2, 3, -4], [0.5, 0.25, -1, 2]], np.float32)
    np.save(os.path.join(out, "x24.npy"), x)
    with open(os.path.join(out, "x24.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    np.save(os.path.join(out, "x234.npy"), np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8 - 1)
    backend_tests(os.path.join(out, "backend"), models["gemm_relu"])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    shutil.rmtree(sys.argv[1], ignore_errors=True)
    os.makedirs(sys.argv[1])
    write_all(sys.argv[1])
