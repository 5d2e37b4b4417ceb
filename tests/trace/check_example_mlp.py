"""End to end: the C++ MLP example runs with weights PyTorch made.

check_example_mlp.py EXAMPLE KFUSE WORKDIR
  1. loads examples/mlp/mlp.safetensors (written by make_mlp.py from torch
     Linear layers) into the same torch model,
  2. runs the C++ example with --weights on a random input, and compares its
     output with torch's (max abs diff <= 1e-5),
  3. runs the module the example saved (--save) with `kfuse run` and checks
     it gives the example's output again.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
WEIGHTS = os.path.join(ROOT, "examples", "mlp", "mlp.safetensors")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"])
    return out


def main():
    example, kfuse, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    x = np.random.default_rng(1).standard_normal((32, 2)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)

    w = {k: torch.from_numpy(v.copy()) for k, v in read_safetensors(WEIGHTS).items()}
    h = torch.relu(torch.from_numpy(x) @ w["fc1.weight"].T + w["fc1.bias"])
    h = torch.relu(h @ w["fc2.weight"].T + w["fc2.bias"])
    want = torch.softmax(h @ w["fc3.weight"].T + w["fc3.bias"], dim=1).numpy()

    subprocess.run([example, "--weights", WEIGHTS, "--input", os.path.join(work, "x.npy"), "--output",
                    os.path.join(work, "y.npy"), "--save", os.path.join(work, "mlp_cpp.kir")], check=True)
    got = np.load(os.path.join(work, "y.npy"))
    diff = float(np.max(np.abs(got - want)))
    print("C++ MLP vs torch with the same weights: max abs diff %.3g" % diff)
    if got.shape != want.shape or diff > 1e-5:
        sys.exit("mismatch: %s vs %s, max abs diff %g" % (got.shape, want.shape, diff))

    # The saved module through the interpreter gives the example's output
    # bit for bit; compiled for the cpu target, within float rounding.
    for target, tol in (("interpreter", 0.0), ("cpu", 1e-6)):
        out = os.path.join(work, "run-" + target)
        subprocess.run([kfuse, "run", os.path.join(work, "mlp_cpp.kir"), "--target", target, "--input",
                        "x=" + os.path.join(work, "x.npy"), "--output-dir", out], check=True)
        again = np.load(os.path.join(out, "output0.npy"))
        d = float(np.max(np.abs(again - got)))
        print("kfuse run --target %s vs the example: max abs diff %.3g" % (target, d))
        if again.shape != got.shape or d > tol:
            sys.exit("kfuse run --target %s on the saved module differs from the example's output" % target)


if __name__ == "__main__":
    main()
