"""kfuse (cpu target) against PyTorch eager on the CPU and onnxruntime.

Runs bench/kfuse_bench (built by bench/run.sh) and PyTorch / onnxruntime in
this process, on the same ONNX-exported models, weights and inputs, in
alternating rounds (kfuse, PyTorch, onnxruntime, next workload, ..., repeat),
and prints Markdown tables: medians per workload and their ratios, launches
per step against ATen operator calls, compile times.

  bench/run.sh [--threads N] [--rounds R] [--round-seconds S] [--json FILE] [--cpu NAME]

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
    # Many short rounds rather than a few long ones: on a shared host the
    # neighbours' load comes in bursts of a second or more, and a burst that
    # covers one engine's long round skews the ratio; with 35 rounds of
    # 0.05 s every engine samples the same bursts (the transformer block's
    # ratio to onnxruntime ranged 0.79-1.11x over six 7 x 0.25 s runs and
    # came out 1.09x and 1.04x with 35 x 0.05 s, in the same ten minutes).
    p.add_argument("--rounds", type=int, default=35, help="timed rounds per engine and workload (default 35)")
    p.add_argument("--round-seconds", type=float, default=0.05,
                   help="target length of one round of one engine on one workload (default 0.05 s)")
    p.add_argument("--json", help="also write all measurements to this file")
    p.add_argument("--cpu", choices=sorted(LEVELS),
                   help="kfuse's code for a named CPU (haswell on an AVX-512 machine: AVX2 code at real speed); "
                        "OpenBLAS (kfuse's and PyTorch's) and PyTorch's own kernels are held to the same level, "
                        "onnxruntime cannot be and keeps the machine's")
    return p.parse_args()


# --cpu: LLVM's CPU name -> the OpenBLAS core, PyTorch's ATEN_CPU_CAPABILITY
# and oneDNN's ONEDNN_MAX_CPU_ISA (PyTorch's convolutions) of the same
# instruction sets.
_V2, _AVX = ("Nehalem", "default", "SSE41"), ("Sandybridge", "default", "AVX")
_AVX2, _AVX512 = ("Haswell", "avx2", "AVX2"), ("SkylakeX", "avx512", "AVX512_CORE")
LEVELS = {"x86-64-v2": _V2, "nehalem": _V2, "sandybridge": _AVX, "haswell": _AVX2, "x86-64-v3": _AVX2,
          "znver3": _AVX2, "skylake-avx512": _AVX512, "x86-64-v4": _AVX512}


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
# One thread per engine: every engine, kfuse_bench's process included, on
# one CPU, one at a time. Unpinned, kfuse_bench (its own process) ran
# beside this process and its idle engines: its CNN and transformer medians
# were 25% slower in one run of three while PyTorch's and onnxruntime's were
# unchanged; pinned, runs on either CPU agreed within 1%.
if ARGS.threads == 1 and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
# Before torch and onnxruntime load their thread pools (and kfuse_bench
# inherits the environment).
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
if ARGS.cpu:
    (os.environ["OPENBLAS_CORETYPE"], os.environ["ATEN_CPU_CAPABILITY"],
     os.environ["ONEDNN_MAX_CPU_ISA"]) = LEVELS[ARGS.cpu]
elif "OPENBLAS_CORETYPE" not in os.environ and openblas_coretype():
    os.environ["OPENBLAS_CORETYPE"] = openblas_coretype()

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

from workloads import export, iteration, make_workloads  # noqa: E402

torch.set_num_threads(ARGS.threads)
torch.set_num_interop_threads(1)


# ---------------------------------------------------------------- engines

class Kfuse:
    def __init__(self, binary, manifest):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(ARGS.threads), OMP_NUM_THREADS=str(ARGS.threads))
        cpu = ["--cpu", ARGS.cpu] if ARGS.cpu else []
        self.proc = subprocess.Popen([binary] + cpu + [manifest], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
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
    """One iteration of the workload in PyTorch eager (workloads.iteration)."""
    y = torch.from_numpy(w["y"]) if w["kind"] == "train" else None
    return iteration(w["torch_model"], w["kind"], torch.from_numpy(w["x"]), y, w.get("lr"))


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
    print("%s, %d cores, %s; %d thread(s) per engine; kfuse's code for %s; OPENBLAS_CORETYPE=%s; "
          "ATEN_CPU_CAPABILITY=%s; ONEDNN_MAX_CPU_ISA=%s; torch %s, onnxruntime %s (the machine's own ISA); "
          "load average %.2f at start, %.2f at end (1 min)\n" % (
              m["cpu"], m["cores"], m["date"], ARGS.threads, ARGS.cpu or "this CPU",
              os.environ.get("OPENBLAS_CORETYPE", "(auto)"), os.environ.get("ATEN_CPU_CAPABILITY", "(auto)"),
              os.environ.get("ONEDNN_MAX_CPU_ISA", "(auto)"), m["torch"], m["onnxruntime"], load_start[0],
              load_end[0]))
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
    print("kfuse: launches the runtime counted in one iteration (kernel bundles, GEMM calls, convolutions, "
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
