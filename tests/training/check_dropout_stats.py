"""Dropout in training mode from ONNX, checked statistically through kfuse.

  check_dropout_stats.py KFUSE WORKDIR

A model with one ONNX Dropout-13 node in training mode (ratio from a
constant, then from an initializer) returning its output and its mask is
imported, turned into a training step (`autodiff{loss=none optimizer=none
keep-outputs=true}`, the pipeline `kfuse train` runs), and the step run by
`kfuse run` at several step numbers on the cpu target and the interpreter.
Checked, for every (ratio, target, step):

- the kept fraction is 1 - ratio within Z_BOUND binomial standard
  deviations, sqrt(ratio (1 - ratio) / n) (a false failure has probability
  about 6e-7 per check with Z_BOUND 5, and the draws are deterministic, so a
  pass stays a pass);
- kept elements are x / (1 - ratio) (within one f32 rounding), dropped ones
  exactly 0, and the mask output is exactly where y is kept;
- the masks of two steps differ in about 2 ratio (1 - ratio) of the
  elements (within Z_BOUND standard deviations): fresh masks each step,
  not merely different ones;
- cpu and interpreter give bit-identical y and masks;
- `dropout-seed` (kfuse train --seed) changes the masks, the same way on
  both targets; the imported function (kfuse run, step 0) draws a mask
  unlike any step's.
Run with Debian's Python (/usr/bin/python3: numpy, onnx)."""
import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N = (64, 256)  # 16384 elements per draw
STEPS = (1, 2, 7)
Z_BOUND = 5.0
TARGETS = ("cpu", "interpreter")


def model(ratio, ratio_from_initializer):
    """x -> Dropout(ratio, training_mode=true) -> (sum(y), y, mask)."""
    nodes, inits = [], []
    if ratio_from_initializer:
        inits.append(numpy_helper.from_array(np.array(ratio, np.float32), "ratio"))
    else:
        nodes.append(helper.make_node("Constant", [], ["ratio"], value=numpy_helper.from_array(
            np.array(ratio, np.float32))))
    nodes.append(helper.make_node("Constant", [], ["training"], value=numpy_helper.from_array(np.array(True))))
    nodes.append(helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"], name="/drop/Dropout"))
    nodes.append(helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0))
    graph = helper.make_graph(nodes, "dropout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, N)],
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
                               helper.make_tensor_value_info("y", TensorProto.FLOAT, N),
                               helper.make_tensor_value_info("mask", TensorProto.BOOL, N)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    return m


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: %s\n%s" % (" ".join(cmd), r.stdout))
    return r.stdout


class Checker:
    def __init__(self):
        self.failures = []

    def expect(self, ok, what):
        if not ok:
            self.failures.append(what)
            print("FAIL", what)


def main():
    kfuse, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    # Away from 0, so that a kept element is never 0 and y shows the mask.
    x = (rng.uniform(0.5, 2.0, N) * rng.choice([-1, 1], N)).astype(np.float32)
    x_path, lr_path = os.path.join(work, "x.npy"), os.path.join(work, "lr.npy")
    np.save(x_path, x)
    np.save(lr_path, np.array(0.1, np.float32))
    n = x.size
    c = Checker()
    for ratio, from_init in ((0.3, False), (0.5, True), (0.1, False)):
        tag = "ratio %.1f (%s)" % (ratio, "initializer" if from_init else "constant")
        base = os.path.join(work, "r%g" % ratio)
        onnx.save(model(ratio, from_init), base + ".onnx")
        run([kfuse, "import", base + ".onnx", "-o", base + ".kir"])
        draws = {}  # (seed, target, step) -> (y, mask)
        for seed in (0, 5):
            step_kir = "%s_seed%d_step.kir" % (base, seed)
            run([kfuse, "opt", base + ".kir", "-o", step_kir, "--passes",
                 "autodiff{loss=none optimizer=none keep-outputs=true dropout-seed=%d}" % seed])
            for target in TARGETS:
                for step in STEPS if seed == 0 else STEPS[:1]:
                    s_path, out = os.path.join(work, "step%d.npy" % step), "%s_%d_%s_%d" % (base, seed, target, step)
                    np.save(s_path, np.array(step, np.int64))
                    run([kfuse, "run", step_kir, "--target", target, "--input",
                         "x=" + x_path, "--input", "lr=" + lr_path, "--input", "step=" + s_path, "--output-dir", out])
                    outs = sorted(f for f in os.listdir(out) if f.endswith(".npy"))
                    # Results: the loss, then the forward's y and mask.
                    arrays = [np.load(os.path.join(out, f)) for f in outs]
                    ys = [a for a in arrays if a.dtype == np.float32 and a.shape == N]
                    masks = [a for a in arrays if a.dtype == np.bool_]
                    if len(ys) != 1 or len(masks) != 1:
                        sys.exit("FAIL: %s: expected one f32 %s result and one bool mask, got %s" %
                                 (out, N, [(f, a.dtype, a.shape) for f, a in zip(outs, arrays)]))
                    draws[(seed, target, step)] = (ys[0], masks[0])
        # The imported function itself (kfuse run): step 0.
        for target in TARGETS:
            out = "%s_forward_%s" % (base, target)
            run([kfuse, "run", base + ".kir", "--target", target, "--input", "x=" + x_path, "--output-dir", out])
            ys = [np.load(os.path.join(out, f)) for f in sorted(os.listdir(out)) if f.endswith(".npy")]
            draws[(None, target, 0)] = (next(a for a in ys if a.shape == N and a.dtype == np.float32),
                                        next(a for a in ys if a.dtype == np.bool_))

        sd = math.sqrt(ratio * (1 - ratio) / n)
        scale = np.float32(1.0 / (1.0 - ratio))
        for (seed, target, step), (y, mask) in sorted(draws.items(), key=str):
            where = "%s, seed %s, %s, step %d" % (tag, seed, target, step)
            kept = float(mask.mean())
            z = (kept - (1 - ratio)) / sd
            print("%-48s kept %.4f (want %.4f, z = %+.2f)" % (where, kept, 1 - ratio, z))
            c.expect(abs(z) <= Z_BOUND, "%s: kept fraction %.4f is %.1f standard deviations from %.4f" %
                     (where, kept, z, 1 - ratio))
            want = x.astype(np.float64) / (1.0 - ratio)
            err = float(np.max(np.abs(y[mask] - want[mask]) / np.abs(want[mask]))) if mask.any() else 0.0
            c.expect(err <= 2 ** -23, "%s: kept elements are not x / (1 - ratio): rel err %.2e" % (where, err))
            c.expect(np.all(y[~mask] == 0), "%s: dropped elements are not 0" % where)
            c.expect(np.array_equal(mask, y != 0), "%s: the mask output is not where y is kept" % where)
        for seed in (0, 5):
            for step in STEPS if seed == 0 else STEPS[:1]:
                a, b = draws[(seed, "cpu", step)], draws[(seed, "interpreter", step)]
                c.expect(np.array_equal(a[0].view(np.uint32), b[0].view(np.uint32)) and np.array_equal(a[1], b[1]),
                         "%s, seed %d, step %d: cpu and interpreter differ" % (tag, seed, step))
        # Fresh masks: two independent draws differ in 2 p (1 - p) of the elements.
        p_diff = 2 * ratio * (1 - ratio)
        sd_diff = math.sqrt(p_diff * (1 - p_diff) / n)
        pairs = [((0, s), (0, t)) for i, s in enumerate(STEPS) for t in STEPS[i + 1:]]
        pairs += [((0, STEPS[0]), (5, STEPS[0])), ((0, STEPS[0]), (None, 0))]
        for (sa, ta), (sb, tb) in pairs:
            diff = float(np.mean(draws[(sa, "cpu", ta)][1] != draws[(sb, "cpu", tb)][1]))
            z = (diff - p_diff) / sd_diff
            print("%-48s masks of (seed %s, step %d) and (seed %s, step %d) differ in %.4f (want %.4f, z = %+.2f)" %
                  (tag, sa, ta, sb, tb, diff, p_diff, z))
            c.expect(abs(z) <= Z_BOUND, "%s: masks (seed %s, step %d) and (seed %s, step %d) differ in %.4f of the "
                     "elements, not about %.4f" % (tag, sa, ta, sb, tb, diff, p_diff))
    if c.failures:
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
