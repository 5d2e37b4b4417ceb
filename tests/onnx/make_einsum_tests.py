"""Writes ONNX backend-test folders (model.onnx, test_data_set_0/) for Einsum
equations beyond ONNX's own node tests: implicit outputs, ellipses that
broadcast, several operands, repeated labels (diagonals, traces), labels
summed before any product, outer products. Expected outputs from
numpy.einsum in float64.

    python3 make_einsum_tests.py OUT_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model

CASES = [
    ("matmul_implicit", "ij,jk", [(2, 3), (3, 4)]),
    ("transpose_implicit", "ba", [(2, 3)]),
    ("trace", "ii", [(4, 4)]),
    ("trace_explicit", "ii->", [(3, 3)]),
    ("diagonal", "ii->i", [(3, 3)]),
    ("diagonal_three_axes", "iji->ij", [(3, 2, 3)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("hadamard", "ij,ij->ij", [(2, 3), (2, 3)]),
    ("sum_before_product", "ij,jk->i", [(2, 3), (3, 4)]),
    ("bilinear", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("three_chain", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ellipsis_batch", "...ij,...jk->...ik", [(2, 3, 2, 3), (2, 3, 3, 4)]),
    ("ellipsis_broadcast", "...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),
    ("ellipsis_implicit", "...ij,...jk", [(2, 2, 3), (2, 3, 4)]),
    ("ellipsis_kept", "...i->...", [(2, 3, 4)]),
    ("ellipsis_middle", "a...b->ba...", [(2, 3, 4, 5)]),
    ("attention_scores", "bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("upper_case", "Ab,bC->AC", [(2, 3), (3, 2)]),
    ("spaces", " ij , jk -> ik ", [(2, 3), (3, 2)]),
    ("scalar_operand", ",i->i", [(), (3,)]),
]


def write(out, name, equation, shapes, rng):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(equation.replace(" ", ""), *[a.astype(np.float64) for a in arrays]).astype(np.float32)
    names = ["x%d" % i for i in range(len(arrays))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in zip(names, arrays)]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, want.shape)
    model = helper.make_model(helper.make_graph([node], name, inputs, [output]),
                              opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 7
    folder = os.path.join(out, "test_einsum_" + name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    save_model(model, os.path.join(folder, "model.onnx"))
    for i, (n, a) in enumerate(zip(names, arrays)):
        with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(want, "y").SerializeToString())


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(5)
    for name, equation, shapes in CASES:
        write(out, name, equation, shapes, rng)


if __name__ == "__main__":
    main()
