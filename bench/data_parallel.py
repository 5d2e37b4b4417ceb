#!/usr/bin/env python3
"""Step time of data-parallel training on this machine: 2 ranks against 1.

  python3 bench/data_parallel.py [--kfuse build/bin/kfuse] [--rounds 3] [--out DIR]

Trains each model with `kfuse train` three ways, alternating in rounds, all
pinned to the same cores (taskset -c 0,1):
  1 process, 1 thread; 1 process, 2 threads; 2 ranks (--ranks 2), 1 thread each
on the same global batch, and prints the median time per step (the epochs
after the first, which compiles) and the ratios. Models: a torchvision
ResNet-18 (10 classes, 64x64 images, batch 16) and the spiral MLP
(2-64-64-3, batch 300), exported by Debian's torch (the test oracle: no venv
needed). Not a test: numbers depend on the machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def export_resnet(out, batch):
    import torch
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=10)
    m.train()
    x = torch.randn(batch, 3, 64, 64)
    path = f"{out}/resnet18_train.onnx"
    torch.onnx.export(m, x, path, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      opset_version=13, input_names=["x"], output_names=["logits"])
    rng = np.random.default_rng(0)
    n = batch * 4
    np.savez(f"{out}/resnet18_data.npz", x=rng.normal(0, 1, (n, 3, 64, 64)).astype(np.float32),
             y=rng.integers(0, 10, n).astype(np.int64))
    return path, f"{out}/resnet18_data.npz", batch


def write_mlp(out, batch):
    rng = np.random.default_rng(0)
    n = batch * 8
    np.savez(f"{out}/mlp_data.npz", x=rng.normal(0, 1, (n, 2)).astype(np.float32),
             y=rng.integers(0, 3, n).astype(np.int64))
    init = {}
    for i, (o, k) in enumerate([(64, 2), (64, 64), (3, 64)], 1):
        init[f"fc{i}.weight"] = rng.uniform(-1, 1, (o, k)).astype(np.float32) / np.sqrt(k)
        init[f"fc{i}.bias"] = np.zeros(o, np.float32)
    lines = ["module @mlp {"]
    for name, a in init.items():
        lines.append(f"  param @{name} : f32[{','.join(map(str, a.shape))}] = dense<f32[{','.join(map(str, a.shape))}]>"
                     f"[{', '.join(f'{v:.6f}' for v in a.ravel())}]")
    lines.append(f"  func @forward(%x: f32[{batch},2]) -> (f32[{batch},3]) {{")
    prev = "%x"
    for i, (o, _) in enumerate([(64, 2), (64, 64), (3, 64)], 1):
        lines.append(f"    %m{i} = matmul {prev}, @fc{i}.weight {{transpose_b = true}} : f32[{batch},{o}]")
        lines.append(f"    %a{i} = add %m{i}, @fc{i}.bias : f32[{batch},{o}]")
        prev = f"%a{i}"
        if i < 3:
            lines.append(f"    %r{i} = relu {prev} : f32[{batch},{o}]")
            prev = f"%r{i}"
    lines += [f"    return {prev}", "  }", "}"]
    path = f"{out}/mlp.kir"
    open(path, "w").write("\n".join(lines) + "\n")
    return path, f"{out}/mlp_data.npz", batch


def step_time(kfuse, model, data, batch, extra, out, tag, epochs):
    log = f"{out}/{tag}.jsonl"
    cmd = ["taskset", "-c", "0,1", kfuse, "train", model, "--data", data, "--batch", str(batch), "--epochs",
           str(epochs), "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.01", "--no-shuffle", "--log-json", log]
    r = subprocess.run(cmd + extra, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(cmd + extra)} failed:\n{r.stderr}")
    records = [json.loads(line) for line in open(log)]
    steps = sum(1 for rec in records if rec["type"] == "step" and rec["epoch"] == 1)
    return [rec["seconds"] / steps for rec in records if rec["type"] == "epoch" and rec["epoch"] > 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", default=os.path.join(HERE, "..", "build", "bin", "kfuse"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="/tmp/kfuse_dp_bench")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    models = {"resnet18 (batch 16, 64x64)": export_resnet(a.out, 16), "spiral MLP (batch 300)": write_mlp(a.out, 300)}
    ways = {"1 process, 1 thread": ["--threads", "1"], "1 process, 2 threads": ["--threads", "2"],
            "2 ranks, 1 thread each": ["--ranks", "2", "--threads", "1"]}
    for name, (model, data, batch) in models.items():
        epochs = 4
        times = {w: [] for w in ways}
        for _ in range(a.rounds):
            for w, extra in ways.items():
                times[w] += step_time(a.kfuse, model, data, batch, extra, a.out, "run", epochs)
        base = statistics.median(times["1 process, 1 thread"])
        print(f"\n{name}: median ms per step over {a.rounds} rounds x {epochs - 1} epochs")
        for w in ways:
            med = statistics.median(times[w])
            print(f"  {w:24s} {1e3 * med:9.2f} ms   {base / med:5.2f}x of 1 process, 1 thread")


if __name__ == "__main__":
    main()
