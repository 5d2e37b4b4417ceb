#!/usr/bin/env python3
"""Runs the models a current PyTorch exported (tests/onnx/modern/, written by
scripts/export-test-models.py: opset 20, IR 10, a symbolic batch axis) in
kfuse and compares them with PyTorch's outputs.

  modern_models.py run KFUSE MODEL_DIR WORKDIR
      `kfuse run` on the cpu target and on the interpreter, with the batch
      bound through --shape. Each output is measured against the same model
      run by PyTorch in float64 (the result float32 arithmetic approximates),
      relative to the output's largest magnitude; it passes within 1e-5, or
      within twice PyTorch's own float32 error where that is larger (a deep
      network in float32 can be 1e-5 away from exact whoever computes it).
      Then again with a batch of 1 (the first sample), against the first row
      of the reference: the batch axis really is dynamic. Last, on the cpu
      target with --threads 1 and --threads 3, at both batches: the outputs
      must be the same bits (results do not depend on the thread count; a
      batch of 1 splits convolutions into tiles and channel blocks).
  modern_models.py train KFUSE MODEL_DIR WORKDIR
      `kfuse train` (cross-entropy, SGD) for the steps train_losses.json
      records from PyTorch on the same batch; each loss within 1e-4 relative.
"""
import json
import os
import subprocess
import sys

import numpy as np

REL = 1e-5


def kfuse_run(kfuse, model_dir, inputs, target, out_dir, threads=None):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [kfuse, "run", os.path.join(model_dir, "model.onnx"), "--target", target, "--output-dir", out_dir]
    if threads:
        cmd += ["--threads", str(threads)]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}", "--shape", f"{name}={','.join(map(str, np.load(path).shape))}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kfuse run failed ({' '.join(cmd)}):\n{r.stdout}{r.stderr}")


def max_rel(a, exact):
    scale = max(float(np.max(np.abs(exact))), 1e-30)
    return float(np.max(np.abs(a.astype(np.float64) - exact))) / scale


def compare(name, got, torch32, exact):
    if got.shape != exact.shape:
        print(f"  {name}: shape {list(got.shape)}, expected {list(exact.shape)} (FAIL)")
        return False
    err, torch_err = max_rel(got, exact), max_rel(torch32, exact)
    bound = max(REL, 2 * torch_err)
    ok = err <= bound
    print(f"  {name}: shape {list(got.shape)}, max error {err:.3g} of the largest magnitude (PyTorch float32: "
          f"{torch_err:.3g}; bound {bound:.3g}) {'ok' if ok else 'FAIL'}")
    return ok


def run(kfuse, model_dir, work):
    names = sorted(f[len("input_"):-4] for f in os.listdir(model_dir) if f.startswith("input_"))
    outputs = sorted(f[len("output_"):-4] for f in os.listdir(model_dir)
                     if f.startswith("output_") and not f.endswith(".f64.npy"))
    full = {n: os.path.join(model_dir, f"input_{n}.npy") for n in names}
    single = {}
    os.makedirs(work, exist_ok=True)
    for n, path in full.items():
        single[n] = os.path.join(work, f"single_{n}.npy")
        np.save(single[n], np.load(path)[:1])
    ok = True
    for target in ("cpu", "interpreter"):
        for batch, inputs in (("batch", full), ("batch of 1", single)):
            out_dir = os.path.join(work, f"{target}_{batch.replace(' ', '_')}")
            kfuse_run(kfuse, model_dir, inputs, target, out_dir)
            print(f"{os.path.basename(model_dir)} on {target}, {batch}:")
            for o in outputs:
                torch32 = np.load(os.path.join(model_dir, f"output_{o}.npy"))
                exact = np.load(os.path.join(model_dir, f"output_{o}.f64.npy"))
                if inputs is single:
                    torch32, exact = torch32[:1], exact[:1]
                ok &= compare(o, np.load(os.path.join(out_dir, f"{o}.npy")), torch32, exact)
    same = True
    for batch, inputs in (("batch", full), ("batch of 1", single)):
        runs = {}
        for threads in (1, 3):
            out_dir = os.path.join(work, f"cpu_{batch.replace(' ', '_')}_threads{threads}")
            kfuse_run(kfuse, model_dir, inputs, "cpu", out_dir, threads)
            runs[threads] = [np.load(os.path.join(out_dir, f"{o}.npy")) for o in outputs]
        bits = all(a.tobytes() == b.tobytes() for a, b in zip(runs[1], runs[3]))
        same &= bits
        print(f"{os.path.basename(model_dir)} on cpu, {batch}, 1 and 3 threads: "
              f"{'the same bits' if bits else 'DIFFERENT (FAIL)'}")
    return 0 if ok and same else 1


def train(kfuse, model_dir, work):
    ref = json.load(open(os.path.join(model_dir, "train_losses.json")))
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.jsonl")
    data = np.load(os.path.join(model_dir, "train.npz"))
    cmd = [kfuse, "train", os.path.join(model_dir, "model.onnx"), "--data", os.path.join(model_dir, "train.npz"),
           "--x-key", "x", "--y-key", "y", "--loss", "cross_entropy", "--optimizer", ref["optimizer"],
           "--lr", str(ref["lr"]), "--epochs", str(len(ref["losses"])), "--no-shuffle",
           "--shape", f"input={','.join(map(str, data['x'].shape))}", "--log-json", log]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kfuse train failed ({' '.join(cmd)}):\n{r.stdout}{r.stderr}")
    losses = [json.loads(line)["loss"] for line in open(log) if '"step"' in line]
    ok = len(losses) == len(ref["losses"])
    for step, (got, want) in enumerate(zip(losses, ref["losses"])):
        good = abs(got - want) <= 1e-4 * abs(want)
        ok &= good
        print(f"step {step}: kfuse {got:.7f}, torch {want:.7f} ({'ok' if good else 'FAIL'})")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("run", "train"):
        sys.exit(__doc__)
    sys.exit((run if sys.argv[1] == "run" else train)(*sys.argv[2:]))
