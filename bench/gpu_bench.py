"""kfuse (cuda target) against PyTorch eager and torch.compile on one GPU.

Two stages, because the GPU machines have no ONNX and no network:

  prepare (on a development machine with kfuse's dependencies, /usr/bin/python3):
      bench/gpu_bench.py prepare --kfuse build/bin/kfuse --out bench/gpu_models
    exports the workloads of bench/workloads.py (spiral MLP training step,
    784-512-512-10 MLP training step, transformer encoder block inference)
    to ONNX, imports them with `kfuse import` (.kir + .safetensors), and
    saves each input, label and PyTorch state_dict, so that both engines run
    the same weights and data.

  run (on the GPU machine; scripts/gpu-check.sh calls it):
      bench/gpu_bench.py run --kfuse build-gpu/bin/kfuse --models bench/gpu_models --out RESULTS
    times each workload in kfuse (`kfuse profile --wall-only`, with and
    without --cuda-graph), PyTorch eager and torch.compile (where torch has
    it), counts launches (kfuse's runtime count; PyTorch's GPU kernels from
    torch.profiler), and writes RESULTS/gpu_bench.json and gpu_bench.md.
    `--device cpu` runs the same against kfuse's cpu target and PyTorch on
    the CPU: a dry run of the whole script on a machine without a GPU.
    It also reports the memory bandwidth a large fused elementwise kernel
    (mul, add, relu over --bandwidth-batch x 2^20 floats) achieves: the
    bytes `kfuse stats` says its plan moves over the kernel's own time
    (`kfuse profile`, CUDA events), against --peak-gbs when given.

Step times are means over --repeat iterations after --warmup (CUDA events
for PyTorch on the GPU, wall clock otherwise; kfuse times whole runs, with
the copies of inputs in and outputs out). Nothing here asserts a time.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ("spiral_mlp_train", "mlp_train", "transformer_infer")
# One fused kernel reading x and writing y: its batch is re-typed at run time
# (--bandwidth-batch), so the file stays small.
ELEMENTWISE_KIR = """module @elementwise {
  func @main(%x: f32[4,1048576]) -> (f32[4,1048576]) {
    %a = mul %x, %x : f32[4,1048576]
    %b = add %a, %x : f32[4,1048576]
    %y = relu %b : f32[4,1048576]
    return %y
  }
}
"""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="stage", required=True)
    prep = sub.add_parser("prepare", help="export and import the models (needs onnx and kfuse's ONNX frontend)")
    prep.add_argument("--kfuse", required=True, help="the kfuse binary (built with the ONNX frontend)")
    prep.add_argument("--out", required=True, help="folder for the models, inputs and weights")
    run = sub.add_parser("run", help="time the workloads")
    run.add_argument("--kfuse", required=True, help="the kfuse binary")
    run.add_argument("--models", required=True, help="the folder `prepare` wrote")
    run.add_argument("--out", required=True, help="folder for gpu_bench.json and gpu_bench.md")
    run.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                     help="cuda (default), or cpu for a dry run against kfuse's cpu target")
    run.add_argument("--repeat", type=int, default=200, help="timed iterations per engine (default 200)")
    run.add_argument("--warmup", type=int, default=20, help="untimed iterations first (default 20)")
    run.add_argument("--bandwidth-batch", type=int,
                     help="rows of 2^20 floats for the bandwidth kernel (default 64 on cuda: 256 MB per tensor; "
                          "2 on cpu)")
    run.add_argument("--peak-gbs", type=float, help="the device's memory bandwidth in GB/s, for the percentage")
    return p.parse_args()


# ---------------------------------------------------------------- prepare

def prepare(args):
    import torch
    from workloads import export, make_workloads
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for w in make_workloads():
        if w["name"] not in WORKLOADS:
            continue
        onnx_path, _ = export(w, args.out)
        kir = os.path.join(args.out, w["name"] + ".kir")
        if subprocess.run([args.kfuse, "import", onnx_path, "-o", kir]).returncode != 0:
            sys.exit("gpu_bench: error: kfuse import %s failed (above)" % onnx_path)
        data = {"x": torch.from_numpy(w["x"])}
        if w["kind"] == "train":
            data["y"] = torch.from_numpy(w["y"])
        torch.save(data, os.path.join(args.out, w["name"] + ".data.pt"))
        torch.save(w["model"].state_dict(), os.path.join(args.out, w["name"] + ".state.pt"))
        manifest.append({k: w[k] for k in ("name", "kind", "title")} | {"lr": w.get("lr")})
    with open(os.path.join(args.out, "elementwise.kir"), "w") as f:
        f.write(ELEMENTWISE_KIR)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("gpu_bench: prepared %d workloads in %s" % (len(manifest), args.out))


# ---------------------------------------------------------------- kfuse

def kfuse_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip())
    return json.loads(r.stdout)


def kfuse_time(args, w, graph):
    """kfuse profile --wall-only: mean ms per run and launches per run."""
    target = args.device  # kfuse's target of the same name
    cmd = [args.kfuse, "profile", os.path.join(args.models, w["name"] + ".kir"), "--target", target,
           "--wall-only", "--json", "--repeat", str(args.repeat), "--warmup", str(args.warmup),
           "--input", "x=" + os.path.join(args.models, w["name"] + ".x.npy")]
    if w["kind"] == "train":
        cmd += ["--train", "--loss", "cross_entropy", "--optimizer", "adam"]
    if graph:
        cmd.append("--cuda-graph")
    try:
        j = kfuse_json(cmd)
    except RuntimeError as e:
        return {"error": str(e)}
    return {"ms": j["run_wall_us"] / 1e3, "launches": j["measured_launches_per_run"],
            "plan_launches": j["launches_per_run"]}


def bandwidth(args):
    """GB/s of the fused elementwise kernel: the bytes its plan moves (kfuse
    stats) over the kernel's own mean time (kfuse profile)."""
    target = args.device  # kfuse's target of the same name
    batch = args.bandwidth_batch or (64 if args.device == "cuda" else 2)
    model = os.path.join(args.models, "elementwise.kir")
    common = [model, "--target", target, "--batch", str(batch), "--json"]
    try:
        stats = kfuse_json([args.kfuse, "stats"] + common)
        prof = kfuse_json([args.kfuse, "profile"] + common + ["--repeat", str(args.repeat), "--warmup",
                                                              str(args.warmup)])
    except RuntimeError as e:
        return {"error": str(e)}
    (step,) = prof["steps"]
    gbs = stats["fused"]["bytes_moved"] / (step["mean_us"] * 1e3)
    out = {"kernel": step["name"], "floats": batch << 20, "bytes": stats["fused"]["bytes_moved"],
           "kernel_us": step["mean_us"], "gbs": gbs}
    if args.peak_gbs:
        out["peak_gbs"] = args.peak_gbs
        out["percent_of_peak"] = 100 * gbs / args.peak_gbs
    return out


# ---------------------------------------------------------------- PyTorch

def torch_time(torch, step, args):
    for _ in range(args.warmup):
        step()
    if args.device == "cuda":
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.repeat):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / args.repeat
    t = time.perf_counter()
    for _ in range(args.repeat):
        step()
    return (time.perf_counter() - t) * 1e3 / args.repeat


def torch_launches(torch, step, device):
    """Kernels one iteration launches on the GPU (torch.profiler's CUDA
    events: kernels, memcpy, memset), or ATen operator calls on the CPU."""
    from torch.profiler import ProfilerActivity, profile
    step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        step()
        if device == "cuda":
            torch.cuda.synchronize()
    if device == "cuda":
        from torch.autograd import DeviceType
        return sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
    return sum(1 for e in prof.events() if e.name.startswith("aten::"))


def torch_engine(torch, args, w, compiled):
    import copy

    from workloads import encoder_block, iteration, mlp
    build = {"spiral_mlp_train": lambda: mlp([2, 64, 64, 3]), "mlp_train": lambda: mlp([784, 512, 512, 10]),
             "transformer_infer": encoder_block}[w["name"]]
    model = build()
    model.load_state_dict(torch.load(os.path.join(args.models, w["name"] + ".state.pt")))
    model = copy.deepcopy(model).to(args.device)
    data = torch.load(os.path.join(args.models, w["name"] + ".data.pt"))
    if compiled:
        if not hasattr(torch, "compile"):
            return {"error": "torch %s has no torch.compile" % torch.__version__}
        model = torch.compile(model)
    y = data["y"].to(args.device) if w["kind"] == "train" else None
    step = iteration(model, w["kind"], data["x"].to(args.device), y, w["lr"])
    ms = torch_time(torch, step, args)
    return {"ms": ms, "launches": torch_launches(torch, step, args.device)}


# ---------------------------------------------------------------- run

def fmt(r, key="ms"):
    if "error" in r:
        return "-"
    return "%.3f" % r[key] if key == "ms" else "%g" % r[key]


def ratio(other, kf):
    if "error" in other or "error" in kf:
        return "-"
    return "%.2fx" % (other["ms"] / kf["ms"])


def machine(torch, device):
    m = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
         "host": platform.node(), "torch": torch.__version__, "python": platform.python_version(),
         "device": device}
    if device == "cuda":
        m["gpu"] = torch.cuda.get_device_name(0)
    return m


def run(args):
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_bench: torch sees no CUDA device (use --device cpu for a dry run)")
    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)
    results = []
    for w in manifest:
        r = {"name": w["name"], "title": w["title"], "kind": w["kind"]}
        r["kfuse"] = kfuse_time(args, w, graph=False)
        if args.device == "cuda":
            r["kfuse_graph"] = kfuse_time(args, w, graph=True)
        r["eager"] = torch_engine(torch, args, w, compiled=False)
        r["compile"] = torch_engine(torch, args, w, compiled=True) if args.device == "cuda" else {
            "error": "torch.compile is timed on the GPU only"}
        results.append(r)
        print("gpu_bench: %s done" % w["name"], file=sys.stderr)
    report = {"machine": machine(torch, args.device), "repeat": args.repeat, "warmup": args.warmup,
              "results": results, "bandwidth": bandwidth(args)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpu_bench.json"), "w") as f:
        json.dump(report, f, indent=1)
    md = markdown(report)
    with open(os.path.join(args.out, "gpu_bench.md"), "w") as f:
        f.write(md)
    print(md)


def markdown(report):
    m = report["machine"]
    lines = ["# kfuse vs PyTorch eager vs torch.compile (%s)" % m["device"], "",
             "%s; %s; torch %s, Python %s; mean of %d iterations after %d warm-up." % (
                 m["date"], m.get("gpu", "CPU dry run"), m["torch"], m["python"], report["repeat"],
                 report["warmup"]), "",
             "| workload | kfuse ms | kfuse + CUDA Graph ms | eager ms | torch.compile ms | eager / kfuse | "
             "compile / kfuse | kfuse launches | eager kernels | compile kernels |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        g = r.get("kfuse_graph", {"error": "cpu"})
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["title"], fmt(r["kfuse"]), fmt(g), fmt(r["eager"]), fmt(r["compile"]), ratio(r["eager"], r["kfuse"]),
            ratio(r["compile"], r["kfuse"]), fmt(r["kfuse"], "launches"), fmt(r["eager"], "launches"),
            fmt(r["compile"], "launches")))
    b = report["bandwidth"]
    if "error" in b:
        lines += ["", "Bandwidth kernel: not measured: %s" % b["error"]]
    else:
        peak = " (%.0f%% of %g GB/s)" % (b["percent_of_peak"], b["peak_gbs"]) if "peak_gbs" in b else ""
        lines += ["", "Bandwidth: `%s` over %d floats moves %.1f MB in %.1f us: %.1f GB/s%s." % (
            b["kernel"], b["floats"], b["bytes"] / 1e6, b["kernel_us"], b["gbs"], peak)]
    errors = [(r["name"], e, r[e]["error"]) for r in report["results"]
              for e in ("kfuse", "kfuse_graph", "eager", "compile") if e in r and "error" in r[e]]
    if errors:
        lines += ["", "Not measured:"] + ["- %s, %s: %s" % e for e in errors]
    lines.append("")
    if m["device"] == "cpu":
        lines.append("Launches on the CPU: kfuse's runtime count; PyTorch's ATen operator calls (all, nested "
                     "included).")
    else:
        lines.append("Launches: kfuse's runtime count per step (one per CUDA Graph replay with the graph); "
                     "PyTorch's CUDA events per step from torch.profiler (kernels, memcpy, memset).")
    return "\n".join(lines) + "\n"


def check_inputs(args):
    """Bad paths stop here with one line, not a traceback halfway through."""
    if not (os.path.isfile(args.kfuse) and os.access(args.kfuse, os.X_OK)):
        sys.exit("gpu_bench: error: --kfuse %s is not an executable file" % args.kfuse)
    if args.stage == "run" and not os.path.isfile(os.path.join(args.models, "manifest.json")):
        sys.exit("gpu_bench: error: %s has no manifest.json (run `gpu_bench.py prepare` first)" % args.models)


def main():
    args = parse_args()
    check_inputs(args)
    sys.path.insert(0, HERE)
    prepare(args) if args.stage == "prepare" else run(args)


if __name__ == "__main__":
    main()
