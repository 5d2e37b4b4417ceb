"""bench/gpu_bench.py, dry run on the CPU: prepare the three workloads with
this build's kfuse (ONNX export, kfuse import), then time them with
`run --device cpu` for a few iterations, and check what the GPU machines'
run will report: every engine measured, kfuse's counted launches per step
equal to its plan's, the bandwidth kernel's bytes (read x, write y) and
GB/s, the JSON and the Markdown table written.

  gpu_bench_dry_run.py SOURCE_DIR KFUSE SCRATCH_DIR
"""
import json
import os
import shutil
import subprocess
import sys

src, kfuse, scratch = sys.argv[1:4]
shutil.rmtree(scratch, ignore_errors=True)
bench = os.path.join(src, "bench", "gpu_bench.py")
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
subprocess.run([sys.executable, bench, "prepare", "--kfuse", kfuse, "--out", os.path.join(scratch, "models")],
               check=True, env=env, stdout=subprocess.DEVNULL)
subprocess.run([sys.executable, bench, "run", "--kfuse", kfuse, "--models", os.path.join(scratch, "models"),
                "--out", os.path.join(scratch, "results"), "--device", "cpu", "--repeat", "3", "--warmup", "1"],
               check=True, env=env, stdout=subprocess.DEVNULL)
with open(os.path.join(scratch, "results", "gpu_bench.json")) as f:
    report = json.load(f)
problems = []
names = [r["name"] for r in report["results"]]
if names != ["spiral_mlp_train", "mlp_train", "transformer_infer"]:
    problems.append("workloads %s" % names)
for r in report["results"]:
    for engine in ("kfuse", "eager"):
        if "error" in r[engine] or not r[engine]["ms"] > 0:
            problems.append("%s %s: %s" % (r["name"], engine, r[engine]))
    k = r["kfuse"]
    if "error" not in k and k["launches"] != k["plan_launches"]:
        problems.append("%s: kfuse counted %s launches per step, its plan has %s" % (
            r["name"], k["launches"], k["plan_launches"]))
b = report["bandwidth"]
if "error" in b or not b["gbs"] > 0 or b["bytes"] != 2 * 4 * b["floats"]:
    problems.append("bandwidth: %s" % b)
# Bad paths: one line naming them, exit status 1.
for argv, want in (
        (["run", "--kfuse", kfuse, "--models", os.path.join(scratch, "nowhere"), "--out", scratch],
         "has no manifest.json (run `gpu_bench.py prepare` first)"),
        (["prepare", "--kfuse", os.path.join(scratch, "no-kfuse"), "--out", scratch], "is not an executable file")):
    r = subprocess.run([sys.executable, bench] + argv, capture_output=True, text=True)
    if r.returncode != 1 or want not in r.stderr or "Traceback" in r.stderr:
        problems.append("%s: exit %d, %r" % (argv[0], r.returncode, r.stderr))
with open(os.path.join(scratch, "results", "gpu_bench.md")) as f:
    table = f.read()
if table.count("\n| ") != 4:  # header and three workloads
    problems.append("the Markdown table:\n" + table)
for p in problems:
    print("FAIL:", p)
if not problems:
    print("gpu_bench dry run: ok")
    shutil.rmtree(scratch, ignore_errors=True)
sys.exit(1 if problems else 0)
