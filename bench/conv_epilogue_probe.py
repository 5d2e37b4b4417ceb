#!/usr/bin/env python3
"""One-step convolutions with an epilogue, to time a direct convolution's
epilogue inside it against a second pass (exec/conv_epilogue.h).

Writes OUT/<case>.kir (weights inline, fixed seed), then, given kfuse
binaries, times each with `kfuse profile` in alternated rounds, pinned to
the CPUs given, and prints the step's median and best round per binary:

    python3 bench/conv_epilogue_probe.py --out /tmp/probe --rounds 10 \\
        --threads 1 --cpus 1 OLD/kfuse NEW/kfuse

Cases: a 1x1 convolution 16 -> 96 over 112x112 rows (EfficientNet-B0's and
MobileNetV2's expansions) with a ReLU and with a SiLU, and ResNet-18's 3x3
64 -> 64 convolution over 56x56 planes with a ReLU. Only the standard
library is needed.
"""
import argparse
import json
import os
import random
import statistics
import subprocess

CASES = {
    "relu_rows": ((1, 16, 112, 112), (96, 16, 1, 1), "", ["relu"]),
    "silu_rows": ((1, 16, 112, 112), (96, 16, 1, 1), "", ["silu"]),
    "relu_planes": ((1, 64, 56, 56), (64, 64, 3, 3), " {pads = [1, 1, 1, 1]}", ["relu"]),
}


def dense(shape, rng):
    n = 1
    for d in shape:
        n *= d
    values = ", ".join(f"{rng.uniform(-0.3, 0.3):.3f}" for _ in range(n))
    return f"dense<f32[{','.join(map(str, shape))}]>[{values}]"


def kir(x, w, attrs, tail, rng):
    y = f"f32[{x[0]},{w[0]},{x[2]},{x[3]}]"
    body = [f"    %0 = conv2d %x, @w, @b{attrs} : {y}"]
    if tail == ["relu"]:
        body.append(f"    %1 = relu %0 : {y}")
    else:
        body += [f"    %s = sigmoid %0 : {y}", f"    %1 = mul %0, %s : {y}"]
    return "\n".join([
        "module @probe {",
        f"  param @w : f32[{','.join(map(str, w))}] = {dense(w, rng)}",
        f"  param @b : f32[{w[0]}] = {dense([w[0]], rng)}",
        f"  func @main(%x: f32[{','.join(map(str, x))}]) -> ({y}) {{",
        *body,
        "    return %1",
        "  }",
        "}",
        "",
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the .kir files")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=60, help="kfuse profile --repeat")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--cpus", default="1", help="taskset -c list")
    ap.add_argument("binaries", nargs="*", help="kfuse binaries to alternate")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(1)
    paths = {}
    for name, (x, w, attrs, tail) in CASES.items():
        paths[name] = os.path.join(a.out, name + ".kir")
        with open(paths[name], "w") as f:
            f.write(kir(x, w, attrs, tail, rng))
    for name, path in paths.items():
        times = {b: [] for b in a.binaries}
        for r in range(a.rounds):
            for b in a.binaries if r % 2 == 0 else a.binaries[::-1]:
                out = subprocess.run(["taskset", "-c", a.cpus, b, "profile", path, "--threads", a.threads,
                                      "--repeat", str(a.repeat), "--json"], capture_output=True, text=True, check=True)
                times[b].append(json.loads(out.stdout)["steps_total_us"])
        for b in a.binaries:
            print(f"{name}: {b}: median {statistics.median(times[b]):.0f} us, best {min(times[b]):.0f} us")


if __name__ == "__main__":
    main()
