#!/usr/bin/env python3
"""Writes ONNX's node tests, as the installed onnx package defines them, into
OUT/<test name>/ (model.onnx and test_data_set_N/{input,output}_K.pb), the
layout of ONNX's backend-test data that `kfuse test-onnx` reads.

The onnx wheel on PyPI ships the test cases (onnx.backend.test.case.node: each
op's examples, with outputs from ONNX's reference implementation) but not the
node folders Debian's libonnx-testdata has; this turns the cases into them.

    python gen_node_tests.py OUT
"""
import os
import shutil
import sys

import onnx
import onnx.backend.test.case.node as node_cases
from onnx import TensorProto, numpy_helper


def serialize(value, info):
    t = info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, info.name).SerializeToString()
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, info.name).SerializeToString()
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, info.name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, info.name).SerializeToString()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    cases = node_cases.collect_testcases()
    for case in cases:
        folder = os.path.join(out, case.name)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, value in enumerate(values):
                    with open(os.path.join(data, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(serialize(value, infos[j]))
    print(f"{len(cases)} node tests of onnx {onnx.__version__} in {out}")


if __name__ == "__main__":
    main()
