#!/usr/bin/env python3
"""Per-layer times of a zoo model in onnxruntime and OpenVINO, to set beside
`kfuse profile` (which gives kfuse's per step): where an engine is faster,
on which layers.

    taskset -c 1 bench/zoo/.venv/bin/python bench/zoo/layer_profile.py resnet18 --top 15
    taskset -c 1 bench/zoo/.venv/bin/python bench/zoo/layer_profile.py convnext_tiny --engines openvino --runs 30
    taskset -c 1 build/bin/kfuse profile bench/zoo/out/resnet18.onnx --threads 1 --repeat 20

One thread per engine (pin the process with taskset, as above). onnxruntime:
its session profile (SessionOptions.enable_profiling), node events
averaged over the timed runs; OpenVINO: PERF_COUNT's per-node real times,
averaged the same way. Prints each engine's total and its slowest nodes,
with their op and (OpenVINO) the kernel it picked.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def model_and_inputs(name: str):
    out = HERE / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    entry = next((m for m in manifest["models"] if m["name"] == name and m.get("status") == "ok"), None)
    if entry is None:
        raise SystemExit(f"layer_profile: no exported model {name!r} in {out / 'manifest.json'}")
    return out / entry["file"], {i["name"]: np.load(out / i["npy"]) for i in entry["inputs"]}


def onnxruntime_layers(path: Path, feeds: dict, runs: int, warmup: int):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        sess.run(None, feeds)
    for _ in range(runs):
        sess.run(None, feeds)
    events = json.loads(Path(sess.end_profiling()).read_text())
    per = defaultdict(list)
    ops = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        node = e["name"][: -len("_kernel_time")]
        per[node].append(e["dur"])
        ops[node] = e.get("args", {}).get("op_name", "?")
    # The first `warmup` runs of each node are the warm-up's.
    return {n: (statistics.mean(d[warmup:] or d), ops[n], "") for n, d in per.items()}


def openvino_layers(path: Path, feeds: dict, runs: int, warmup: int):
    import openvino as ov
    core = ov.Core()
    # f32, as bench.py runs it (on a CPU with AVX-512 BF16 OpenVINO would
    # otherwise compute in bf16).
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1, "PERF_COUNT": True,
                                                      "PERFORMANCE_HINT": "LATENCY",
                                                      "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    for _ in range(warmup):
        req.infer(feeds)
    totals = defaultdict(float)
    kinds = {}
    for _ in range(runs):
        req.infer(feeds)
        for p in req.get_profiling_info():
            if p.status != p.Status.EXECUTED:
                continue
            totals[p.node_name] += p.real_time.total_seconds() * 1e6
            kinds[p.node_name] = (p.node_type, p.exec_type)
    return {n: (t / runs, kinds[n][0], kinds[n][1]) for n, t in totals.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a zoo model's name (bench/zoo/out/manifest.json)")
    ap.add_argument("--engines", default="ort,openvino", help="ort, openvino or both (comma-separated)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--top", type=int, default=20, help="slowest nodes to list per engine")
    args = ap.parse_args()
    path, feeds = model_and_inputs(args.model)
    engines = {"ort": onnxruntime_layers, "openvino": openvino_layers}
    for name in args.engines.split(","):
        if name not in engines:
            raise SystemExit(f"layer_profile: unknown engine {name!r} (ort, openvino)")
        layers = engines[name](path, feeds, args.runs, args.warmup)
        total = sum(t for t, _, _ in layers.values())
        print(f"{name}: {args.model}, {len(layers)} nodes, {total / 1000:.2f} ms per run (mean of {args.runs})")
        for node, (t, op, kernel) in sorted(layers.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"  {t:9.1f} us  {op:<22} {kernel:<28} {node}")


if __name__ == "__main__":
    main()
