"""Exports a PyTorch model with torch.onnx.export, runs it in kfuse and in
PyTorch on the same input, and fails unless they agree.

Usage: torch_crosscheck.py MODEL --kfuse PATH --workdir DIR [--opset N]

MODEL is one of the names in MODELS below. Each run checks three paths
through kfuse on the same input, all against PyTorch (max |diff| <= 1e-4):
  1. kfuse run MODEL.onnx --input x=x.npy            (import on the fly)
  2. kfuse import MODEL.onnx -o MODEL.kir, then kfuse run MODEL.kir
  3. kfuse run MODEL.onnx with ONNX TensorProto .pb inputs and outputs
and that paths 1 and 2 give bit-identical outputs. Models exported with a
dynamic batch dimension must also be refused without --shape, naming it.

Run with Debian's Python (/usr/bin/python3: torch 1.13, torchvision 0.14,
onnx 1.12, numpy). Nothing is downloaded: torchvision models are built
with random weights.
"""
import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torchvision

TOLERANCE = 1e-4


class SmallCNN(torch.nn.Module):
    """Conv (padding, stride, groups, dilation) + BatchNorm + pools + Linear.
    The exporter folds a BatchNorm that directly follows a Conv into it, so
    two of them come after a ReLU or a Linear to stay BatchNormalization nodes."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), torch.nn.ReLU(), torch.nn.BatchNorm2d(16),
            torch.nn.Conv2d(16, 16, 3, padding=2, dilation=2), torch.nn.ReLU(),
            torch.nn.AvgPool2d(2),
        )
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16 * 2 * 2, 10), torch.nn.BatchNorm1d(10))

    def forward(self, x):
        return self.head(self.body(x))


class Decoder(torch.nn.Module):
    """ConvTranspose2d (stride, padding, output_padding, groups) and
    nn.Upsample (bilinear, nearest), which export as ConvTranspose and Resize."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, output_padding=1, groups=2), torch.nn.ReLU(),
            torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            torch.nn.ConvTranspose2d(8, 4, 2, stride=2),
            torch.nn.Upsample(scale_factor=0.5, mode="nearest"),
            torch.nn.Conv2d(4, 3, 1),
        )

    def forward(self, x):
        return self.net(x)


class EncoderLayer(torch.nn.Module):
    """nn.TransformerEncoderLayer with a causal mask and a key padding mask."""

    def __init__(self, activation):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
                                                      activation=activation)
        self.register_buffer("mask", torch.triu(torch.full((8, 8), float("-inf")), diagonal=1))
        pad = torch.zeros(2, 8, dtype=torch.bool)
        pad[1, 6:] = True
        self.register_buffer("pad", pad)

    def forward(self, x):
        return self.layer(x, src_mask=self.mask, src_key_padding_mask=self.pad)


def randomize_batchnorm(model):
    """Non-trivial running statistics, so that BatchNorm is really tested."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


# name -> (builder, input shape, default opset, dynamic batch)
MODELS = {
    "mlp": (lambda: torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                                        torch.nn.Tanh(), torch.nn.Linear(32, 4)), (5, 16), 11, False),
    "mlp_dynamic_batch": (lambda: torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4),
                                                      torch.nn.Softmax(dim=1)), (3, 16), 14, True),
    "cnn_bn": (SmallCNN, (2, 3, 16, 16), 13, False),
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), (1, 3, 64, 64), 14, False),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=10), (1, 3, 64, 64), 13, False),
    "decoder": (Decoder, (1, 3, 8, 8), 13, False),
    "transformer_relu": (lambda: EncoderLayer("relu"), (8, 2, 32), 14, False),
    "transformer_gelu": (lambda: EncoderLayer("gelu"), (8, 2, 32), 17, False),
}


def kfuse(args, *argv, expect_fail=False):
    r = subprocess.run([args.kfuse, *argv], capture_output=True, text=True)
    if (r.returncode != 0) != expect_fail:
        sys.exit("kfuse %s exited with %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(argv), r.returncode, r.stdout,
                                                                      r.stderr))
    return r


def check_close(what, got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        sys.exit("%s: kfuse gives %s %s, PyTorch %s %s" % (what, got.dtype, got.shape, want.dtype, want.shape))
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    print("%-28s max |kfuse - torch| = %.3g" % (what, diff))
    if not diff <= TOLERANCE:
        sys.exit("%s: max abs difference %.3g exceeds %g" % (what, diff, TOLERANCE))
    return diff


def export(name, args):
    build, shape, default_opset, dynamic = MODELS[name]
    torch.manual_seed(0)
    model = randomize_batchnorm(build()).eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2))
    path = os.path.join(args.workdir, name + ".onnx")
    opset = args.opset or default_opset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None)
    with torch.no_grad():
        want = model(x).numpy()
    return path, x.numpy(), want, opset, dynamic


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=sorted(MODELS))
    p.add_argument("--kfuse", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--opset", type=int)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    start = time.time()
    path, x, want, opset, dynamic = export(args.model, args)
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print("%s: opset %d, input %s, ONNX ops %s" % (args.model, opset, "x".join(map(str, x.shape)), " ".join(ops)))
    w = lambda f: os.path.join(args.workdir, f)
    np.save(w("x.npy"), x)
    shape = ["--shape", "x=" + ",".join(map(str, x.shape))] if dynamic else []
    if dynamic:
        r = kfuse(args, "run", path, "--input", "x=" + w("x.npy"), expect_fail=True)
        if "batch" not in r.stderr or "--shape" not in r.stderr:
            sys.exit("kfuse should refuse the symbolic batch dimension by name, said:\n" + r.stderr)

    kfuse(args, "run", path, "--input", "x=" + w("x.npy"), "--output-dir", w("out_onnx"), *shape)
    direct = np.load(w("out_onnx/y.npy"))
    check_close("run .onnx (npy)", direct, want)

    kfuse(args, "import", path, "-o", w(args.model + ".kir"), *shape)
    kfuse(args, "run", w(args.model + ".kir"), "--input", "x=" + w("x.npy"), "--output-dir", w("out_kir"))
    via_kir = np.load(w("out_kir/y.npy"))
    check_close("import + run .kir", via_kir, want)
    if not np.array_equal(direct, via_kir):
        sys.exit("running the .onnx and the imported .kir gave different outputs")

    with open(w("x.pb"), "wb") as f:
        f.write(onnx.numpy_helper.from_array(x, "x").SerializeToString())
    kfuse(args, "run", path, "--input", "x=" + w("x.pb"), "--output-dir", w("out_pb"), *shape)
    pb = onnx.TensorProto()
    with open(w("out_pb/y.pb"), "rb") as f:
        pb.ParseFromString(f.read())
    check_close("run .onnx (pb)", onnx.numpy_helper.to_array(pb), want)
    print("%s: OK in %.1f s" % (args.model, time.time() - start))


if __name__ == "__main__":
    main()
