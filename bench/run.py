"""kfuse (cpu target) against PyTorch eager on the CPU and onnxruntime.

Runs bench/kfuse_bench (built by bench/run.sh) and PyTorch / onnxruntime in
this process, on the same ONNX-exported models, weights and inputs, in
alternating rounds (kfuse, PyTorch, onnxruntime, next workload, ..., repeat),
and prints Markdown tables: medians per workload and their ratios, launches
per step against ATen operator calls, compile times.

  bench/run.sh [--threads N] [--rounds R] [--round-seconds S] [--json FILE]

Needs torch, onnx and onnxruntime (bench/.venv from bench/setup-venv.sh).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kfuse-bench", required=True, help="path of the kfuse_bench binary")
    p.add_argument("--out", default=os.path.join(HERE, "out"), help="models, inputs, results (default bench/out)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for every engine: OpenBLAS in kfuse (its generated kernels are single-threaded), "
                        "torch.set_num_threads, onnxruntime intra-op (default 1)")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per engine and workload (default 7)")
    p.add_argument("--round-seconds", type=float, default=0.25,
                   help="target length of one round of one engine on one workload (default 0.25 s)")
    p.add_argument("--json", help="also write all measurements to this file")
    return p.parse_args()


def openblas_coretype():
    """OpenBLAS picks its kernels from the CPUID model; on CPUs it does not
    know (virtual machines report "Intel Xeon Processor") it falls back to
    PRESCOTT, its SSE3 kernels, several times slower. Name the core by the
    instruction sets the CPU has instead (an explicit OPENBLAS_CORETYPE wins)."""
    try:
        flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()
    except (OSError, StopIteration):
        return None
    if "avx512f" in flags and "avx512bw" in flags:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


ARGS = parse_args()
# Before torch and onnxruntime load their thread pools (and kfuse_bench
# inherits the environment).
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
if "OPENBLAS_CORETYPE" not in os.environ and openblas_coretype():
    os.environ["OPENBLAS_CORETYPE"] = openblas_coretype()

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)
torch.set_num_interop_threads(1)


# ---------------------------------------------------------------- workloads

def spiral_data(per_class=86, classes=3, seed=7):
    """CS231n's spiral, 3 x 86 = 258 points cut to the batch of 256."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for k in range(classes):
        r = np.linspace(0, 1, per_class)
        t = 4 * k + 4 * r + 0.2 * rng.standard_normal(per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], 1))
        ys.append(np.full(per_class, k))
    x, y = np.concatenate(xs)[:256], np.concatenate(ys)[:256]
    return x.astype(np.float32), y.astype(np.int64)


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def small_cnn():
    def block(cin, cout):
        return [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]

    m = torch.nn.Sequential(*block(3, 16), *block(16, 32))
    with torch.no_grad():  # non-trivial running statistics, as after training
        for bn in (m[1], m[4]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return m


def encoder_block():
    return torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.0,
                                            batch_first=True)


def make_workloads():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    sx, sy = spiral_data()
    return [
        dict(name="spiral_mlp_train", kind="train", title="spiral MLP training step (2-64-64-3, batch 256, Adam)",
             model=mlp([2, 64, 64, 3]), x=sx, y=sy, lr=0.01),
        dict(name="mlp_train", kind="train", title="MLP training step (784-512-512-10, batch 128, Adam)",
             model=mlp([784, 512, 512, 10]), x=rng.standard_normal((128, 784)).astype(np.float32),
             y=rng.integers(0, 10, 128).astype(np.int64), lr=1e-3),
        dict(name="cnn_infer", kind="infer", title="CNN inference (2x conv-bn-relu, batch 8, 3x32x32)",
             model=small_cnn(), x=rng.standard_normal((8, 3, 32, 32)).astype(np.float32)),
        dict(name="transformer_infer", kind="infer",
             title="transformer encoder block inference (d 128, 4 heads, ffn 512, batch 4, seq 64)",
             model=encoder_block(), x=rng.standard_normal((4, 64, 128)).astype(np.float32)),
    ]


def export(w, out):
    """ONNX model and .npy inputs of a workload, and its manifest line."""
    model = w["model"].eval()
    path = os.path.join(out, w["name"] + ".onnx")
    # With gradients enabled: under no_grad, nn.TransformerEncoderLayer takes
    # its fused fast path (_transformer_encoder_layer_fwd), which ONNX cannot
    # export. PyTorch's own timing below does use the fast path.
    torch.onnx.export(model, (torch.from_numpy(w["x"]),), path, opset_version=14, input_names=["x"],
                      output_names=["y"])
    np.save(os.path.join(out, w["name"] + ".x.npy"), w["x"])
    line = "%s %s %s.onnx %s.x.npy" % (w["name"], w["kind"], w["name"], w["name"])
    if w["kind"] == "train":
        np.save(os.path.join(out, w["name"] + ".y.npy"), w["y"])
        line += " %s.y.npy %r" % (w["name"], w["lr"])
    return path, line


# ---------------------------------------------------------------- engines

class Kfuse:
    def __init__(self, binary, manifest):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(ARGS.threads), OMP_NUM_THREADS=str(ARGS.threads))
        self.proc = subprocess.Popen([binary, manifest], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        self.setup = {}
        for line in self.proc.stdout:
            if line.strip() == "ready":
                break
            info = json.loads(line)
            self.setup[info["name"]] = info
        if self.proc.poll() is not None:
            sys.exit("kfuse_bench failed (exit %s)" % self.proc.returncode)

    def run(self, name, n):
        self.proc.stdin.write("run %s %d\n" % (name, n))
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("kfuse_bench died")
        return json.loads(line)["ms"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait()


def torch_step(w):
    """One iteration of the workload in PyTorch eager: a zero_grad / forward /
    cross_entropy / backward / Adam step, or a forward under inference_mode."""
    model, x = w["torch_model"], torch.from_numpy(w["x"])
    if w["kind"] == "train":
        y = torch.from_numpy(w["y"])
        opt = torch.optim.Adam(model.parameters(), lr=w["lr"])  # foreach=None: the single-tensor loop on CPU
        model.train()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    model.eval()

    def infer():
        with torch.inference_mode():
            return model(x)

    return infer


def ort_session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = ARGS.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def timed(fn, n):
    ms = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1e3)
    return ms


def aten_calls(fn):
    """ATen operator calls of one iteration: (top level, all). Top level: an
    aten:: event with no aten:: event above it (what Python, autograd and the
    optimizer call); all: nested calls (aten::linear -> aten::addmm, ...) too."""
    from torch.profiler import ProfilerActivity, profile
    fn()  # not the first step: Adam creates its state then
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    top = every = 0
    for e in prof.events():
        if not e.name.startswith("aten::"):
            continue
        every += 1
        p = e.cpu_parent
        while p is not None and not p.name.startswith("aten::"):
            p = p.cpu_parent
        top += p is None
    return top, every


# ---------------------------------------------------------------- main

def machine():
    model = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return dict(cpu=model, cores=os.cpu_count(), load=os.getloadavg(), date=datetime.date.today().isoformat(),
                python=platform.python_version(), torch=torch.__version__, onnxruntime=ort.__version__,
                threads=ARGS.threads)


def fmt(ms):
    return "%.3f" % ms if ms < 10 else "%.2f" % ms


def main():
    os.makedirs(ARGS.out, exist_ok=True)
    workloads = make_workloads()
    lines = []
    for w in workloads:
        w["path"], line = export(w, ARGS.out)
        lines.append(line)
    manifest = os.path.join(ARGS.out, "manifest.txt")
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")

    # Every engine starts from the exported weights: the training models are
    # copied before PyTorch's first step.
    import copy
    for w in workloads:
        w["torch_model"] = copy.deepcopy(w["model"])
    load_start = os.getloadavg()

    kf = Kfuse(ARGS.kfuse_bench, manifest)
    checks = {}
    for w in workloads:
        w["engines"] = {"kfuse": lambda n, w=w: kf.run(w["name"], n), "PyTorch": None}
        if w["kind"] == "train":
            with torch.no_grad():  # the loss before the first update, as kfuse's first step returns it
                want = torch.nn.functional.cross_entropy(w["torch_model"](torch.from_numpy(w["x"])),
                                                         torch.from_numpy(w["y"])).item()
            checks[w["name"]] = "first loss kfuse %.6f, PyTorch %.6f" % (kf.setup[w["name"]]["first_loss"], want)
        else:
            with torch.inference_mode():
                want = w["torch_model"].eval()(torch.from_numpy(w["x"])).numpy()
            got = np.load(os.path.join(ARGS.out, w["name"] + ".kfuse.npy"))
            sess = ort_session(w["path"])
            ort_out = sess.run(None, {"x": w["x"]})[0]
            checks[w["name"]] = "max |kfuse - PyTorch| %.2e, max |onnxruntime - PyTorch| %.2e" % (
                np.abs(got - want).max(), np.abs(ort_out - want).max())
            w["engines"]["onnxruntime"] = lambda n, s=sess, x=w["x"]: timed(lambda: s.run(None, {"x": x}), n)
        step = torch_step(w)
        w["engines"]["PyTorch"] = lambda n, step=step: timed(step, n)
        w["aten"] = aten_calls(step)

    # Warm-up (not recorded), and the iterations per round from it.
    for w in workloads:
        warm = {e: statistics.median(run(5)) for e, run in w["engines"].items()}
        w["iters"] = max(3, min(500, int(ARGS.round_seconds * 1e3 / max(warm.values()))))
        w["ms"] = {e: [] for e in w["engines"]}
    for r in range(ARGS.rounds):
        for w in workloads:
            for e, run in w["engines"].items():
                w["ms"][e] += run(w["iters"])
    kf.close()
    load_end = os.getloadavg()

    m = machine()
    print("## kfuse vs PyTorch eager vs onnxruntime, CPU\n")
    print("%s, %d cores, %s; %d thread(s) per engine; OPENBLAS_CORETYPE=%s; torch %s, onnxruntime %s; load "
          "average %.2f at start, %.2f at end (1 min)\n" % (
              m["cpu"], m["cores"], m["date"], ARGS.threads, os.environ.get("OPENBLAS_CORETYPE", "(auto)"),
              m["torch"], m["onnxruntime"], load_start[0], load_end[0]))
    print("Median ms per iteration over %d alternating rounds; ratio = other engine's median / kfuse's "
          "(above 1: kfuse is faster).\n" % ARGS.rounds)
    print("| workload | iters x rounds | kfuse ms | PyTorch ms | onnxruntime ms | PyTorch / kfuse | "
          "onnxruntime / kfuse |")
    print("|---|---|---|---|---|---|---|")
    results = []
    for w in workloads:
        med = {e: statistics.median(v) for e, v in w["ms"].items()}
        ortc = "%s" % fmt(med["onnxruntime"]) if "onnxruntime" in med else "-"
        ortr = "%.2fx" % (med["onnxruntime"] / med["kfuse"]) if "onnxruntime" in med else "-"
        print("| %s | %d x %d | %s | %s | %s | %.2fx | %s |" % (
            w["title"], w["iters"], ARGS.rounds, fmt(med["kfuse"]), fmt(med["PyTorch"]), ortc,
            med["PyTorch"] / med["kfuse"], ortr))
        results.append(dict(name=w["name"], medians_ms=med, iters=w["iters"], rounds=ARGS.rounds,
                            kfuse=kf.setup[w["name"]], aten_top=w["aten"][0], aten_all=w["aten"][1],
                            check=checks[w["name"]], ms=w["ms"]))

    print("\n## Launches per iteration and compile time\n")
    print("kfuse: launches the runtime counted in one iteration (kernel bundles, GEMM/conv library calls, "
          "reference ops). PyTorch: ATen operator calls of one eager iteration (torch.profiler): top level "
          "(no aten:: caller) / all (nested included). Compile: ONNX import, graph passes (autodiff included "
          "for training), plan + LLVM JIT.\n")
    print("| workload | kfuse launches | kfuse kernels | ATen ops top-level / all | ratio to kfuse launches | "
          "import ms | passes ms | plan + JIT ms | check |")
    print("|---|---|---|---|---|---|---|---|---|")
    for w, res in zip(workloads, results):
        k = res["kfuse"]
        print("| %s | %d | %d | %d / %d | %.1fx / %.1fx | %.0f | %.0f | %.0f | %s |" % (
            w["name"], k["launches_per_iter"], k["kernels"], res["aten_top"], res["aten_all"],
            res["aten_top"] / k["launches_per_iter"], res["aten_all"] / k["launches_per_iter"], k["import_ms"],
            k["passes_ms"], k["plan_jit_ms"],
            res["check"]))
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(dict(machine=m, load_start=load_start, load_end=load_end, results=results), f, indent=1)


if __name__ == "__main__":
    main()
