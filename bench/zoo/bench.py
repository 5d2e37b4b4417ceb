#!/usr/bin/env python3
"""The real-model benchmark: the zoo's models (bench/zoo/export.py, opset 20
as PyTorch 2.x's default exporter writes them) run by kfuse, onnxruntime,
OpenVINO, PyTorch eager and torch.compile, at each thread count, every
engine pinned to the same CPUs, rounds alternating between engines.

    bench/zoo/.venv/bin/python bench/zoo/bench.py                 # all models, 1 and 2 threads
    bench/zoo/.venv/bin/python bench/zoo/bench.py --models resnet18,bert --threads 1 --rounds 9
    bench/zoo/.venv/bin/python bench/zoo/bench.py --engines kfuse,ort --json bench/zoo/out/bench.json

kfuse runs in its own process (build/bench/kfuse_bench, which the script
brings up to date with `cmake --build build --target kfuse_bench` first:
it is not in the build's default target), which compiles every model once and then times
iterations on request; the other engines run in this process. With T
threads, this process and kfuse_bench are pinned to the same T CPUs (the
last T the machine has). Each round gives every engine about
--round-seconds on a model, in an order that rotates from round to round,
so that a burst of load from the machine's neighbours falls on no engine in
particular; onnxruntime and OpenVINO run each round in a process of their
own (their idle workers spin, slowing whatever runs beside them:
WORKER_ENGINES); the table gives
medians over all iterations and the ratio of
each engine's median to kfuse's (above 1: kfuse faster). Compile times:
kfuse's import + passes + plan + JIT, onnxruntime's session creation,
OpenVINO's compile_model, torch.compile's first call.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ENGINES = ["kfuse", "ort", "openvino", "eager", "compile"]
# Engines that run each round in a process of their own (run_worker), made
# anew and ended with it, so that no thread of theirs outlives their round.
# onnxruntime's intra-op workers spin while idle: with every model's session
# alive through the other engines' rounds (one run each, 2 threads,
# 2026-12-04), kfuse's MobileNetV2 took 14.98 ms and BERT 24.2, and with the
# sessions' spinning off 11.09 and 14.39; kfuse alone took 6.4-8.1 and 12.9.
# OpenVINO's run the same way, so that neither engine's threads, nor its
# memory, outlive a round. (A two-thread slowdown of every engine seen on
# 2026-12-05, Zen 4, came and went with the machine, not with them: with
# each round in a worker, kfuse's SqueezeNet took 6.90 ms in one run of
# kfuse and OpenVINO's rounds and 3.77 in the next, OpenVINO's 5.27 and
# 4.54; kfuse's suffers more, its steps split into one static range per
# thread, so a descheduled CPU holds every step up.)
WORKER_ENGINES = {"ort", "openvino"}


def load_manifest(out: Path) -> dict:
    m = json.loads((out / "manifest.json").read_text())
    return {e["name"]: e for e in m["models"] if e.get("status") == "ok"}


def inputs_of(entry: dict, out: Path) -> dict:
    return {i["name"]: np.load(out / i["npy"]) for i in entry["inputs"]}


def infer_lines(models: dict, out: Path) -> list[str]:
    """kfuse_bench's workload lines for the zoo's models (inference)."""
    lines = []
    for name, e in models.items():
        ins = " ".join(f"{i['name']}={(out / i['npy']).resolve()}" for i in e["inputs"])
        lines.append(f"{name} infer {(out / e['file']).resolve()} {ins}")
    return lines


class Kfuse:
    """kfuse_bench, one process per thread count, every workload compiled
    once (`lines`: its workload lines, written to `manifest`). train_bench.py
    uses it too."""

    def __init__(self, binary: Path, lines: list[str], manifest: Path, threads: int, cpus: list[int]):
        # kfuse_bench is not in the build's default target: brought up to date
        # here, or a run after `ninja -C build` would time the old compiler.
        build = binary.parent.parent
        if (build / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "--build", str(build), "--target", "kfuse_bench"], check=True,
                           stdout=subprocess.DEVNULL)
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text("\n".join(lines) + "\n")
        cmd = ["taskset", "-c", ",".join(map(str, cpus)), str(binary), "--threads", str(threads), str(manifest)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.setup = {}
        for line in self.proc.stdout:
            line = line.strip()
            if line == "ready":
                break
            info = json.loads(line)
            self.setup[info["name"]] = info
        if self.proc.poll() is not None:
            sys.exit("kfuse_bench failed during setup")

    def time(self, name: str, n: int) -> list[float]:
        self.proc.stdin.write(f"run {name} {n}\n")
        return json.loads(self.proc.stdout.readline())["ms"]

    def compile_s(self, name: str) -> float:
        s = self.setup[name]
        return (s["import_ms"] + s["passes_ms"] + s["plan_jit_ms"]) / 1e3

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait()


def make_ort(path: Path, threads: int):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    t0 = time.perf_counter()
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return (lambda feeds: s.run(None, feeds)), time.perf_counter() - t0


def make_openvino(path: Path, threads: int):
    import openvino as ov
    core = ov.Core()
    t0 = time.perf_counter()
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                                                      "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    return (lambda feeds: req.infer(feeds)), time.perf_counter() - t0


def torch_models(names):
    """The zoo's PyTorch modules, rebuilt as export.py builds them (seeded)."""
    sys.path.insert(0, str(HERE))
    import export  # noqa: E402
    import torch
    specs = {s.name: s for s in export.specs()}
    out = {}
    for n in names:
        export.seed_all()
        spec = specs[n]
        model = spec.build().eval()
        if spec.family in ("torchvision", "timm"):
            export.calibrate_batchnorm(model, spec.inputs)
        out[n] = (model, spec)
    return out, torch


def make_torch(model, feeds, torch, compiled: bool):
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    fn = torch.compile(model) if compiled else model
    t0 = time.perf_counter()
    with torch.no_grad():
        fn(*args)  # compiles on the first call
    setup = time.perf_counter() - t0

    def run(_):
        with torch.no_grad():
            return fn(*args)
    return run, setup


def bench_threads(args, models, out, threads, cpus):
    os.sched_setaffinity(0, set(cpus))
    runners, setup = {}, {}
    kfuse = None
    if "kfuse" in args.engines:
        kfuse = Kfuse(Path(args.kfuse_bench), infer_lines(models, out), out / "bench" / f"kfuse_t{threads}.txt",
                      threads, cpus)
    feeds = {n: inputs_of(e, out) for n, e in models.items()}
    torch_mods = None
    if {"eager", "compile"} & set(args.engines):
        torch_mods, torch = torch_models(list(models))
        torch.set_num_threads(threads)
    for n, e in models.items():
        if kfuse:
            runners[(n, "kfuse")] = None
            setup[(n, "kfuse")] = kfuse.compile_s(n)
        for eng in WORKER_ENGINES & set(args.engines):
            runners[(n, eng)] = None  # run_worker's, each round
        for eng, compiled in (("eager", False), ("compile", True)):
            if eng in args.engines:
                try:
                    runners[(n, eng)], setup[(n, eng)] = make_torch(torch_mods[n][0], feeds[n], torch, compiled)
                except Exception as ex:  # noqa: BLE001
                    print(f"  torch {eng} cannot run {n}: {str(ex).splitlines()[0][:120]}")
    def measure(n, eng):
        if eng == "kfuse":
            probe = kfuse.time(n, 1)[0] / 1e3
            return kfuse.time(n, max(1, min(200, int(args.round_seconds / max(probe, 1e-6)))))
        if eng in WORKER_ENGINES:
            got = run_worker(args, eng, n, threads)
            if got is None:
                return []
            setup.setdefault((n, eng), got["setup_s"])  # the first round's session or compile
            return got["ms"]
        fn = runners[(n, eng)]
        t0 = time.perf_counter()
        fn(feeds[n])
        probe = time.perf_counter() - t0
        out = timed(lambda: fn(feeds[n]), max(1, min(200, int(args.round_seconds / max(probe, 1e-6)))))
        del fn
        gc.collect()
        return out

    times = alternating_rounds(list(models), args.engines, runners, args.rounds, measure)
    times = {k: v for k, v in times.items() if v}  # an engine that cannot run a model
    if kfuse:
        kfuse.close()
    return {f"{n}|{e}": {"median_ms": statistics.median(v), "iterations": len(v), "setup_s": setup[(n, e)]}
            for (n, e), v in times.items() if v}


def run_worker(args, engine: str, name: str, threads: int):
    """One round of `engine` on model `name` in a process of its own (this
    script's --worker mode, on this process's CPUs): {"setup_s", "ms"}, or
    None, said once, where the engine cannot run the model."""
    cmd = [sys.executable, __file__, "--worker", engine, "--out", args.out, "--models", name,
           "--threads", str(threads), "--round-seconds", str(args.round_seconds)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        if (engine, name) not in run_worker.failed:
            run_worker.failed.add((engine, name))
            lines = (p.stderr.strip() or "no output").splitlines()
            print(f"  {engine} cannot run {name}: {lines[-1][:120]}")
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


run_worker.failed = set()


def worker(args) -> None:
    """--worker ENGINE: one round of one model (--models), printed as JSON."""
    models = load_manifest(Path(args.out))
    e = models[args.models]
    path = Path(args.out) / e["file"]
    feeds = inputs_of(e, Path(args.out))
    make = {"ort": make_ort, "openvino": make_openvino}[args.worker]
    fn, setup_s = make(path, int(args.threads))
    t0 = time.perf_counter()
    fn(feeds)  # warm
    probe = time.perf_counter() - t0
    ms = timed(lambda: fn(feeds), max(1, min(200, int(args.round_seconds / max(probe, 1e-6)))))
    print(json.dumps({"setup_s": setup_s, "ms": ms}))


def timed(fn, reps: int) -> list[float]:
    """Milliseconds of each of `reps` calls of fn."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def alternating_rounds(names, engines, present, rounds, measure) -> dict:
    """`rounds` rounds over every (name, engine) pair in `present`, the
    engines' order rotating from round to round so that a burst of load from
    the machine's neighbours falls on no engine in particular; measure(name,
    engine) gives one round's times in ms. Returns each pair's times."""
    times = {k: [] for k in present}
    engines = [e for e in engines if any(k[1] == e for k in present)]
    for r in range(rounds):
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for n in names:
            for eng in order:
                if (n, eng) in present:
                    times[(n, eng)] += measure(n, eng)
        print(f"  round {r + 1}/{rounds} done", flush=True)
    return times


def table(results, models, threads, engines):
    others = [e for e in engines if e != "kfuse"]
    columns = ["model", "kfuse ms"] + [f"{e} ms" for e in others] + [f"{e} / kfuse" for e in others]
    head = "| " + " | ".join(columns + ["kfuse compile s"]) + " |"  # (no empty columns with kfuse alone)
    lines = [f"### {threads} thread{'s' if threads > 1 else ''}", "", head,
             "|" + "---|" * (3 + 2 * len(others))]
    for n in models:
        k = results.get(f"{n}|kfuse")
        row = [n, f"{k['median_ms']:.2f}" if k else "-"]
        row += [f"{results[f'{n}|{e}']['median_ms']:.2f}" if f"{n}|{e}" in results else "-" for e in others]
        row += [f"{results[f'{n}|{e}']['median_ms'] / k['median_ms']:.2f}x" if k and f"{n}|{e}" in results else "-"
                for e in others]
        row.append(f"{k['setup_s']:.2f}" if k else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "out"), help="the exported zoo (bench/zoo/out)")
    ap.add_argument("--models", help="comma-separated names (default: every exported model)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"of {','.join(ENGINES)}")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--round-seconds", type=float, default=0.1)
    ap.add_argument("--kfuse-bench", default=str(ROOT / "build" / "bench" / "kfuse_bench"))
    ap.add_argument("--json", help="write every median, iteration count and compile time here")
    ap.add_argument("--cpus", help=argparse.SUPPRESS)  # the child process of one thread count
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # one round of one engine (run_worker)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    args.engines = args.engines.split(",")
    out = Path(args.out)
    models = load_manifest(out)
    if args.models:
        models = {n: models[n] for n in args.models.split(",")}
    counts = [int(x) for x in args.threads.split(",")]
    if args.cpus:  # one thread count, in a process of its own (below)
        cpus = [int(c) for c in args.cpus.split(",")]
        results = bench_threads(args, models, out, counts[0], cpus)
        print(table(results, models, counts[0], args.engines), flush=True)
        Path(args.json).write_text(json.dumps(results) + "\n")
        return
    allowed = sorted(os.sched_getaffinity(0))  # before any pinning
    all_results = {}
    print(f"load average at start: {os.getloadavg()}")
    for t in counts:
        cpus = allowed[-t:]
        print(f"== {t} thread(s) on CPUs {cpus}", flush=True)
        all_results[str(t)] = one_thread_count(t, cpus)
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(all_results, indent=1) + "\n")


def one_thread_count(threads: int, cpus: list[int]) -> dict:
    """This script's run at one thread count, in a child process: OpenVINO
    keeps the CPUs its process could use when it first ran (a process
    pinned to one CPU for the 1-thread run then ran ResNet-50 at 2 threads
    in 75 ms, one of its own started on two CPUs in 38), so no engine may
    see an earlier count's pinning."""
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "results.json"
        cmd = [sys.executable, __file__] + strip_option(strip_option(sys.argv[1:], "--threads"), "--json") + \
            ["--threads", str(threads), "--cpus", ",".join(map(str, cpus)), "--json", str(part)]
        subprocess.run(cmd, check=True)
        return json.loads(part.read_text())


def strip_option(argv: list[str], name: str) -> list[str]:
    """argv without `name VALUE` or `name=VALUE`."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == name:
            skip = True
        elif not a.startswith(name + "="):
            out.append(a)
    return out


if __name__ == "__main__":
    main()
