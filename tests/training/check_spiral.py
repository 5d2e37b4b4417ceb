"""The spiral demo against its PyTorch twin: same data and starting weights,
1000 Adam steps each; kfuse's final accuracy must be within 1 point of
PyTorch's and its final loss within 5%.

  check_spiral.py EXAMPLE_SPIRAL_BINARY SPIRAL_TORCH_PY WORKDIR [DEMO OPTIONS...]

(DEMO OPTIONS: e.g. --target cuda --simulate, the demo on the simulated
cuda device.)
"""
import json
import os
import subprocess
import sys

binary, torch_script, work = sys.argv[1:4]
options = sys.argv[4:]
os.makedirs(work, exist_ok=True)
data, init = os.path.join(work, "spiral.npz"), os.path.join(work, "init.safetensors")
ours, theirs = os.path.join(work, "kfuse.json"), os.path.join(work, "torch.json")
subprocess.run([binary, "--save-data", data, "--save-init", init, "--summary", ours,
                "--dump-dir", os.path.join(work, "dumps")] + options, check=True)
subprocess.run([sys.executable, torch_script, data, init, "--summary", theirs], check=True)
k, t = json.load(open(ours)), json.load(open(theirs))
print("kfuse: accuracy %.4f loss %.6f; torch: accuracy %.4f loss %.6f" % (k["accuracy"], k["loss"], t["accuracy"],
                                                                          t["loss"]))
ok = abs(k["accuracy"] - t["accuracy"]) <= 0.01 and abs(k["loss"] - t["loss"]) <= 0.05 * abs(t["loss"])
dumps = sorted(os.listdir(os.path.join(work, "dumps")))
print("dumps:", dumps)
ok = ok and any("after-autodiff" in d for d in dumps) and any("after-fuse" in d for d in dumps)
sys.exit(0 if ok else 1)
