"""Writes the small ONNX models of tests/lit/onnx/scatter_einsum.test: scatter
and einsum nodes, valid ones with inputs that are bad at run time (indices
out of range) and models that are invalid at import (shapes that do not
match, a reduction the node's version lacks, a malformed equation).

    python3 make_index_models.py OUT_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, save_model


def tensor(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(out, name, node, inputs, outputs, opset):
    graph = helper.make_graph([node], name.split(".")[0], inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    save_model(model, os.path.join(out, name))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    i64 = TensorProto.INT64
    save(out, "scatternd.onnx", helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter"),
         [tensor("x", [4, 3]), tensor("i", [2, 1], i64), tensor("u", [2, 3])], [tensor("y", [4, 3])], 16)
    save(out, "scatter_elements.onnx",
         helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter", axis=1, reduction="add"),
         [tensor("x", [2, 3]), tensor("i", [2, 2], i64), tensor("u", [2, 2])], [tensor("y", [2, 3])], 16)
    save(out, "scatternd_bad_updates.onnx", helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter"),
         [tensor("x", [4, 3]), tensor("i", [2, 1], i64), tensor("u", [2, 2])], [tensor("y", [4, 3])], 16)
    save(out, "scatternd_max_at_16.onnx",
         helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter", reduction="max"),
         [tensor("x", [4, 3]), tensor("i", [2, 1], i64), tensor("u", [2, 3])], [tensor("y", [4, 3])], 16)
    save(out, "einsum_sizes.onnx", helper.make_node("Einsum", ["a", "b"], ["c"], name="einsum", equation="ij,jk->ik"),
         [tensor("a", [2, 3]), tensor("b", [4, 5])], [tensor("c", [2, 5])], 12)
    save(out, "einsum_output_label.onnx", helper.make_node("Einsum", ["a"], ["c"], name="einsum", equation="ij->ik"),
         [tensor("a", [2, 3])], [tensor("c", [2, 3])], 12)
    save(out, "einsum_drops_ellipsis.onnx",
         helper.make_node("Einsum", ["a"], ["c"], name="einsum", equation="...i->i"),
         [tensor("a", [2, 3])], [tensor("c", [3])], 12)
    save(out, "einsum_int.onnx", helper.make_node("Einsum", ["a", "b"], ["c"], name="einsum", equation="ij,jk"),
         [tensor("a", [2, 3], i64), tensor("b", [3, 2], i64)], [tensor("c", [2, 2], i64)], 12)
    np.save(os.path.join(out, "x43.npy"), np.arange(12, dtype=np.float32).reshape(4, 3))
    np.save(os.path.join(out, "u23.npy"), np.ones((2, 3), np.float32))
    np.save(os.path.join(out, "i_bad.npy"), np.array([[1], [-5]], np.int64))
    np.save(os.path.join(out, "x23.npy"), np.zeros((2, 3), np.float32))
    np.save(os.path.join(out, "u22.npy"), np.ones((2, 2), np.float32))
    np.save(os.path.join(out, "i_bad_axis1.npy"), np.array([[0, 2], [3, 1]], np.int64))
    np.save(os.path.join(out, "i_ok.npy"), np.array([[1], [-1]], np.int64))


if __name__ == "__main__":
    main()
