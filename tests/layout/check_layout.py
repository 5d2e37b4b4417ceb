"""Layout selection on real models, against kfuse's reference interpreter.

Usage:
  check_layout.py infer MODEL --kfuse PATH --workdir DIR [--transposes N]
  check_layout.py train --kfuse PATH --workdir DIR

infer: exports MODEL (a name from tests/onnx/torch_crosscheck.py: cnn_bn,
resnet18) with torch.onnx.export, runs it on the cpu target with
--layout=nchw, nhwc and auto and on the interpreter (NCHW, the oracle), and
fails unless every cpu output is within 1e-5 of the interpreter's relative to
its largest magnitude. With --transposes N it also counts the transposes left
after layout selection with --layout=nhwc and fails unless there are exactly N.

train: trains the CNN (with batch norm, so batch statistics and their
gradients are involved) for three SGD-with-momentum steps with --layout=nchw
and --layout=nhwc and fails unless the losses agree within 1e-5 and the
trained parameters within 1e-4 (relative to each tensor's largest magnitude;
cpu NCHW against the interpreter differs by 3e-5 after the same steps).

Run with Debian's Python (/usr/bin/python3: torch 1.13, torchvision, onnx).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_np import read_safetensors  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx"))
import torch_crosscheck  # noqa: E402

TOLERANCE = 1e-5


def kfuse(args, *argv):
    r = subprocess.run([args.kfuse, *argv], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("kfuse %s exited with %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
    return r


def rel_diff(got, want):
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def check(what, got, want):
    if got.shape != want.shape:
        sys.exit("%s: shape %s, expected %s" % (what, got.shape, want.shape))
    d = rel_diff(got, want)
    print("%-34s max |diff| / max |ref| = %.3g" % (what, d))
    if not d <= TOLERANCE:
        sys.exit("%s: relative difference %.3g exceeds %g" % (what, d, TOLERANCE))


def infer(args):
    path, x, _, _, _ = torch_crosscheck.export(args.model, args)
    w = lambda f: os.path.join(args.workdir, f)
    np.save(w("x.npy"), x)
    outs = {}
    for name, flags in [("interpreter", ["--target", "interpreter"]), ("nchw", ["--layout=nchw"]),
                        ("nhwc", ["--layout=nhwc"]), ("auto", ["--layout=auto"])]:
        kfuse(args, "run", path, "--input", "x=" + w("x.npy"), "--output-dir", w("out_" + name), *flags)
        outs[name] = np.load(w("out_%s/y.npy" % name))
    for name in ["nchw", "nhwc", "auto"]:
        check("%s: cpu --layout=%s" % (args.model, name), outs[name], outs["interpreter"])
    if args.transposes is not None:
        r = kfuse(args, "opt", path, "--passes=constant-fold,canonicalize,cse,dce,layout{mode=nhwc}")
        count = sum(1 for line in r.stdout.splitlines() if "= transpose " in line)
        print("%s: %d transposes after layout selection (--layout=nhwc)" % (args.model, count))
        if count != args.transposes:
            sys.exit("expected exactly %d transposes, found %d:\n%s" % (args.transposes, count, r.stdout))


def train(args):
    args.model = "cnn_bn"
    path, x, _, _, _ = torch_crosscheck.export("cnn_bn", args)
    w = lambda f: os.path.join(args.workdir, f)
    rng = np.random.default_rng(3)
    # Two steps of one batch: training this small net is chaotic enough that
    # float rounding alone (cpu NCHW against the interpreter) grows to ~1% in
    # eight steps, so a longer run would compare noise, not layouts.
    np.savez(w("data.npz"), x=rng.standard_normal((2,) + x.shape[1:]).astype(np.float32),
             y=rng.integers(0, 10, 2).astype(np.int64))
    losses, weights = {}, {}
    for layout in ["nchw", "nhwc"]:
        kfuse(args, "train", path, "--data", w("data.npz"), "--epochs", "3", "--no-shuffle", "--lr", "0.01",
              "--momentum", "0.9", "--layout=" + layout, "--log-json", w("log_%s.jsonl" % layout),
              "--save-weights", w("weights_%s.safetensors" % layout))
        with open(w("log_%s.jsonl" % layout)) as f:
            losses[layout] = np.array([json.loads(l)["loss"] for l in f if '"step"' in l])
        weights[layout] = read_safetensors(w("weights_%s.safetensors" % layout))
    print("losses nchw", losses["nchw"], "\n       nhwc", losses["nhwc"])
    check("training losses", losses["nhwc"], losses["nchw"])
    if sorted(weights["nhwc"]) != sorted(weights["nchw"]):
        sys.exit("the weights files name different tensors: %s / %s" % (sorted(weights["nchw"]), sorted(weights["nhwc"])))
    # Parameters and running statistics; the momentum buffers hold gradients
    # some of which are zero up to rounding (a Linear bias feeding a batch
    # norm), so they are compared through the parameters they updated. After
    # three steps cpu NCHW itself differs from the interpreter by 3e-5
    # (measured), hence 1e-4 here while the losses must agree to 1e-5.
    worst = max((rel_diff(weights["nhwc"][k], weights["nchw"][k]), k) for k in weights["nchw"]
                if weights["nchw"][k].dtype != np.int64 and "momentum" not in k)
    print("trained weights: worst %s, max |diff| / max |ref| = %.3g" % (worst[1], worst[0]))
    if not worst[0] <= 1e-4:
        sys.exit("trained weights differ: %s by %.3g (relative)" % (worst[1], worst[0]))

def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["infer", "train"])
    p.add_argument("model", nargs="?", default="cnn_bn", choices=sorted(torch_crosscheck.MODELS))
    p.add_argument("--kfuse", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--transposes", type=int)
    args = p.parse_args()
    args.opset = None
    os.makedirs(args.workdir, exist_ok=True)
    infer(args) if args.mode == "infer" else train(args)
    print("OK")


if __name__ == "__main__":
    main()
