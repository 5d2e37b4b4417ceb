#!/usr/bin/env python3
"""kfuse train --ranks N (Gloo over loopback) against one process.

  check_data_parallel.py KFUSE WORKDIR

- the spiral MLP (SGD with momentum) and a small CNN (Adam), trained by one
  process and by 2, 3 and 4 ranks on equal slices of every batch: every
  step's loss within 1e-5 relative, the final weights within 1e-5 relative
  (of the largest weight of each tensor); and the spiral MLP with Adam under
  ZeRO-1 (--zero) on 2 and 3 ranks, its saved moments gathered whole;
- a global batch that does not divide into equal slices is refused before
  any rank starts;
- a rank killed mid-run: the launcher names it and stops the others; a
  rank started by hand (--rank/--world-size/--store) whose peer dies fails
  within its --comm-timeout;
- ranks that compiled different steps (another batch) both refuse to train.
"""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_np import read_safetensors  # noqa: E402

KFUSE, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)


def losses(log):
    return [r["loss"] for r in map(json.loads, open(log)) if r["type"] == "step"]


def run(args, **kw):
    return subprocess.run([KFUSE, "train"] + args, capture_output=True, text=True, timeout=600, **kw)


def spiral():
    rng = np.random.default_rng(0)
    n, k = 100, 3
    x = np.zeros((n * k, 2), np.float32)
    y = np.zeros(n * k, np.int64)
    for c in range(k):
        r = np.linspace(0, 1, n)
        t = 4 * c + 4 * r + rng.normal(0, 0.2, n)
        x[c * n:(c + 1) * n] = np.stack([r * np.sin(t), r * np.cos(t)], 1)
        y[c * n:(c + 1) * n] = c
    np.savez(f"{WORK}/spiral.npz", x=x, y=y)
    sizes = [(64, 2), (64, 64), (3, 64)]
    init = {}
    for i, (o, i_) in enumerate(sizes, 1):
        init[f"fc{i}.weight"] = rng.uniform(-1, 1, (o, i_)).astype(np.float32) / np.sqrt(i_)
        init[f"fc{i}.bias"] = rng.uniform(-0.1, 0.1, o).astype(np.float32)
    np.savez(f"{WORK}/spiral_init.npz", **init)
    b = 60
    with open(f"{WORK}/spiral.kir", "w") as f:
        f.write(f"""module @spiral {{
  param @fc1.weight : f32[64,2]
  param @fc1.bias : f32[64]
  param @fc2.weight : f32[64,64]
  param @fc2.bias : f32[64]
  param @fc3.weight : f32[3,64]
  param @fc3.bias : f32[3]
  func @forward(%x: f32[{b},2]) -> (f32[{b},3]) {{
    %0 = matmul %x, @fc1.weight {{transpose_b = true}} : f32[{b},64]
    %1 = add %0, @fc1.bias : f32[{b},64]
    %2 = relu %1 : f32[{b},64]
    %3 = matmul %2, @fc2.weight {{transpose_b = true}} : f32[{b},64]
    %4 = add %3, @fc2.bias : f32[{b},64]
    %5 = relu %4 : f32[{b},64]
    %6 = matmul %5, @fc3.weight {{transpose_b = true}} : f32[{b},3]
    %7 = add %6, @fc3.bias : f32[{b},3]
    return %7
  }}
}}
""")
    return ["spiral.kir", "--data", "spiral.npz", "--init-weights", "spiral_init.npz", "--batch", "60",
            "--epochs", "4", "--seed", "3", "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.05"]


def cnn():
    rng = np.random.default_rng(1)
    n = 48
    x = rng.normal(0, 1, (n, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, n).astype(np.int64)
    np.savez(f"{WORK}/cnn.npz", x=x, y=y)
    init = {
        "conv1.weight": rng.normal(0, 0.3, (6, 1, 3, 3)).astype(np.float32),
        "conv1.bias": rng.normal(0, 0.1, (1, 6, 1, 1)).astype(np.float32),
        "conv2.weight": rng.normal(0, 0.2, (8, 6, 3, 3)).astype(np.float32),
        "fc.weight": rng.normal(0, 0.2, (4, 32)).astype(np.float32),
        "fc.bias": np.zeros(4, np.float32),
    }
    np.savez(f"{WORK}/cnn_init.npz", **init)
    b = 12
    with open(f"{WORK}/cnn.kir", "w") as f:
        f.write(f"""module @cnn {{
  param @conv1.weight : f32[6,1,3,3]
  param @conv1.bias : f32[1,6,1,1]
  param @conv2.weight : f32[8,6,3,3]
  param @fc.weight : f32[4,32]
  param @fc.bias : f32[4]
  func @forward(%x: f32[{b},1,8,8]) -> (f32[{b},4]) {{
    %0 = conv2d %x, @conv1.weight {{pads = [1, 1, 1, 1]}} : f32[{b},6,8,8]
    %1 = add %0, @conv1.bias : f32[{b},6,8,8]
    %2 = relu %1 : f32[{b},6,8,8]
    %3 = max_pool2d %2 {{kernel = [2, 2], strides = [2, 2]}} : f32[{b},6,4,4]
    %4 = conv2d %3, @conv2.weight {{pads = [1, 1, 1, 1], strides = [2, 2]}} : f32[{b},8,2,2]
    %5 = relu %4 : f32[{b},8,2,2]
    %6 = flatten %5 {{axis = 1}} : f32[{b},32]
    %7 = matmul %6, @fc.weight {{transpose_b = true}} : f32[{b},4]
    %8 = add %7, @fc.bias : f32[{b},4]
    return %8
  }}
}}
""")
    return ["cnn.kir", "--data", "cnn.npz", "--init-weights", "cnn_init.npz", "--batch", "12", "--epochs", "5",
            "--seed", "5", "--optimizer", "adam", "--lr", "0.01"]


failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def same_training(name, args, extra=(), rank_counts=(2, 3, 4)):
    base = run(args + ["--save-weights", f"{name}_1.safetensors", "--log-json", f"{name}_1.jsonl"], cwd=WORK)
    check(base.returncode == 0, f"{name}: one process trains ({base.stderr.strip()})")
    want_w, want_l = read_safetensors(f"{WORK}/{name}_1.safetensors"), losses(f"{WORK}/{name}_1.jsonl")
    for ranks in rank_counts:
        if int(args[args.index("--batch") + 1]) % ranks:
            continue
        tag = f"{name}_{ranks}"
        r = run(args + list(extra) + ["--ranks", str(ranks), "--save-weights", f"{tag}.safetensors", "--log-json",
                                      f"{tag}.jsonl"], cwd=WORK)
        check(r.returncode == 0, f"{name}: {ranks} ranks train ({r.stderr.strip()})")
        if r.returncode:
            continue
        got_l = losses(f"{WORK}/{tag}.jsonl")
        worst = max(abs(a - b) / abs(b) for a, b in zip(got_l, want_l))
        check(len(got_l) == len(want_l) and worst <= 1e-5,
              f"{name}: {ranks} ranks, {len(got_l)} steps' losses within {worst:.2e} relative")
        got_w = read_safetensors(f"{WORK}/{tag}.safetensors")
        worst = max(float(np.max(np.abs(got_w[k].astype(np.float64) - v)) / max(np.max(np.abs(v)), 1e-30))
                    for k, v in want_w.items())
        check(got_w.keys() == want_w.keys() and worst <= 1e-5,
              f"{name}: {ranks} ranks, final weights within {worst:.2e} relative")
        epochs = int(args[args.index("--epochs") + 1])
        check(r.stdout.count("epoch ") == epochs and "accuracy" in r.stdout,
              f"{name}: {ranks} ranks, rank 0 alone prints")


def uneven(args):
    r = run(args[:args.index("--batch")] + ["--batch", "30", "--ranks", "4", "--save-weights", "uneven.safetensors"],
            cwd=WORK)
    check(r.returncode == 1 and "--batch=30 does not divide into 4 equal slices" in r.stderr
          and not os.path.exists(f"{WORK}/uneven.safetensors"), f"uneven batch refused: {r.stderr.strip()}")


def by_hand(args_per_rank, store_name, timeout, stdout=subprocess.DEVNULL):
    """Ranks started as a cluster's launcher would: --rank/--world-size/--store."""
    store = f"{WORK}/{store_name}"
    subprocess.run(["rm", "-rf", store])
    n = len(args_per_rank)
    return [subprocess.Popen([KFUSE, "train"] + a + ["--world-size", str(n), "--rank", str(r), "--store",
                                                     f"file:{store}", "--comm-timeout", str(timeout)],
                             cwd=WORK, stdout=stdout, stderr=subprocess.PIPE, text=True)
            for r, a in enumerate(args_per_rank)]


def wait_for_steps(log, procs, limit=120):
    """Until rank 0 has written step records: every rank compiled and trains.
    A fixed sleep would race the compile on a loaded machine."""
    end = time.time() + limit
    while time.time() < end and all(p.poll() is None for p in procs):
        if os.path.exists(log) and os.path.getsize(log) > 0:
            return True
        time.sleep(0.1)
    return False


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = open(f"/proc/{p}/stat").read()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    out.append((int(p), open(f"/proc/{p}/cmdline").read().split("\0")))
            except (OSError, ValueError, IndexError):
                pass
    return out


def killed_rank(args):
    long = args[:args.index("--epochs")] + ["--epochs", "100000"] + args[args.index("--epochs") + 2:]
    log = f"{WORK}/long.jsonl"
    long += ["--log-json", log]
    subprocess.run(["rm", "-f", log])
    launcher = subprocess.Popen([KFUSE, "train"] + long + ["--ranks", "2", "--comm-timeout", "20"], cwd=WORK,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    victim = None
    for _ in range(200):
        time.sleep(0.1)
        for pid, argv in children(launcher.pid):
            if "--rank" in argv and argv[argv.index("--rank") + 1] == "1":
                victim = pid
        if victim:
            break
    check(victim is not None and wait_for_steps(log, [launcher]), "launcher started rank 1, the ranks train")
    if victim is None or launcher.poll() is not None:
        launcher.kill()
        return
    start = time.time()
    os.kill(victim, signal.SIGKILL)
    try:
        _, err = launcher.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        launcher.kill()
        _, err = launcher.communicate()
    took = time.time() - start
    check(launcher.returncode == 1 and f"rank 1 (pid {victim}) was killed by signal 9" in err and took < 25,
          f"launcher: a killed rank is named, the others stopped, in {took:.1f} s: {err.strip()[-300:]}")

    # By hand: rank 0's peer dies, rank 0 fails within its timeout.
    subprocess.run(["rm", "-f", log])
    ranks = by_hand([long, long], "store_killed", 10)
    check(wait_for_steps(log, ranks), "by hand: the ranks train")
    start = time.time()
    ranks[1].kill()
    try:
        _, err = ranks[0].communicate(timeout=30)
    except subprocess.TimeoutExpired:
        ranks[0].kill()
        _, err = ranks[0].communicate()
    ranks[1].communicate()
    took = time.time() - start
    check(ranks[0].returncode == 1 and "rank 0: all_reduce (another rank ended or stalls) failed" in err and took < 15
          and f"rank 1 (pid {ranks[1].pid}) has ended" in err,
          f"by hand: rank 0 fails {took:.1f} s after its peer died, naming it: {err.strip()[-300:]}")

    # A rank that stalls (stopped, its connections open): the other fails
    # once --comm-timeout has passed.
    subprocess.run(["rm", "-f", log])
    ranks = by_hand([long, long], "store_stalled", 4)
    check(wait_for_steps(log, ranks), "by hand: the ranks train")
    start = time.time()
    ranks[1].send_signal(signal.SIGSTOP)
    try:
        _, err = ranks[0].communicate(timeout=60)
    except subprocess.TimeoutExpired:
        ranks[0].kill()
        _, err = ranks[0].communicate()
    took = time.time() - start
    ranks[1].kill()
    ranks[1].communicate()
    check(ranks[0].returncode == 1 and "rank 0: all_reduce (another rank ended or stalls) failed" in err
          and "no rank has ended: one stalls" in err and 3 <= took < 20,
          f"by hand: rank 0 fails {took:.1f} s after its peer stalled (timeout 4 s): "
          f"{err.strip()[-300:]}")


def mismatched(args):
    per_rank = []
    for batch in ("60", "30"):
        a = list(args)
        a[a.index("--batch") + 1] = batch
        per_rank.append(a)
    procs = by_hand(per_rank, "store_mismatch", 30, stdout=subprocess.PIPE)
    outs = [p.communicate(timeout=120) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        check(p.returncode == 1 and "rank 1 compiled another training step than rank 0" in err and "epoch" not in out,
              f"rank {r} refuses a mismatched plan: {err.strip()}")


spiral_args = spiral()
same_training("spiral", spiral_args)
same_training("cnn", cnn())
# ZeRO-1: the optimizer state sharded over the ranks; the saved Adam moments
# are gathered whole, equal to one process's.
adam = spiral_args[:spiral_args.index("--optimizer")] + ["--optimizer", "adam", "--lr", "0.01"]
same_training("spiral_adam_zero", adam, ["--zero"], (2, 3))
uneven(spiral_args)
mismatched(spiral_args)
killed_rank(spiral_args)
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all data-parallel checks passed")
