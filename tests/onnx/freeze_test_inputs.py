"""Copies ONNX backend tests whose shape-like inputs (shapes, axes, pads,
repeats, scales, k, depth, training_mode...: the operand slots in
SHAPE_SLOTS) are graph inputs, turning those inputs into initializers
holding the test's values. kfuse needs such inputs at import time, so it
skips the originals; the frozen copies run the same ops, with ONNX's
expected outputs, through the lowerings that read constant inputs.

Usage: freeze_test_inputs.py SRC_DIR OUT_DIR
Writes OUT_DIR/<test>_frozen for every test of SRC_DIR with such an input
and a single data set. Run with Debian's Python (onnx, numpy).
"""
import os
import shutil
import sys

import onnx
from onnx import TensorProto

# Operand slots that kfuse reads at import time, by op type.
SHAPE_SLOTS = {
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 2}, "Squeeze": {1},
    "Unsqueeze": {1}, "Split": {1}, "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1},
    "ReduceProd": {1}, "ReduceL1": {1}, "ReduceL2": {1}, "ReduceLogSum": {1}, "ReduceLogSumExp": {1},
    "ReduceSumSquare": {1}, "Resize": {1, 2, 3}, "CumSum": {1}, "OneHot": {1}, "Range": {0, 1, 2},
    "ConstantOfShape": {0}, "Trilu": {1}, "TopK": {1}, "Dropout": {1, 2}, "Upsample": {1},
}


def numbered(folder, prefix):
    files = []
    while os.path.exists(os.path.join(folder, "%s_%d.pb" % (prefix, len(files)))):
        files.append(os.path.join(folder, "%s_%d.pb" % (prefix, len(files))))
    return files


def load_tensor(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def freeze(src, out):
    sets = sorted(d for d in os.listdir(src) if d.startswith("test_data_set_"))
    if len(sets) != 1:
        return False
    model = onnx.load(os.path.join(src, "model.onnx"))
    g = model.graph
    initialized = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in initialized]
    data = os.path.join(src, sets[0])
    files = numbered(data, "input")
    if len(files) != len(inputs):
        return False
    shape_like = set()
    used_otherwise = set()
    for node in g.node:
        for slot, name in enumerate(node.input):
            (shape_like if slot in SHAPE_SLOTS.get(node.op_type, ()) else used_otherwise).add(name)
    frozen, kept = [], []
    for info, path in zip(inputs, files):
        if info.name in shape_like and info.name not in used_otherwise:
            frozen.append((info, path))
        else:
            kept.append((info, path))
    if not frozen or not kept:
        return False
    for info, path in frozen:
        tensor = load_tensor(path)
        tensor.name = info.name
        g.initializer.append(tensor)
        if model.ir_version >= 4:  # before IR 4, initializers must also be graph inputs
            g.input.remove(info)
    os.makedirs(os.path.join(out, sets[0]))
    onnx.save(model, os.path.join(out, "model.onnx"))
    for i, (_, path) in enumerate(kept):
        shutil.copy(path, os.path.join(out, sets[0], "input_%d.pb" % i))
    for path in numbered(data, "output"):
        shutil.copy(path, os.path.join(out, sets[0], os.path.basename(path)))
    return True


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src_root, out_root = sys.argv[1], sys.argv[2]
    shutil.rmtree(out_root, ignore_errors=True)
    os.makedirs(out_root)
    count = 0
    for name in sorted(os.listdir(src_root)):
        src = os.path.join(src_root, name)
        if not os.path.exists(os.path.join(src, "model.onnx")):
            continue
        out = os.path.join(out_root, name + "_frozen")
        if freeze(src, out):
            count += 1
        else:
            shutil.rmtree(out, ignore_errors=True)
    print("froze the inputs of %d tests into %s" % (count, out_root))


if __name__ == "__main__":
    main()
