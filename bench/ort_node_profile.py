"""onnxruntime's time per node of a model, to set beside `kfuse profile`.

Runs MODEL with onnxruntime's CPU provider at THREADS intra-op threads (10
warm-up runs, then 50 profiled), and prints the median kernel time of every
node in execution order, with the op and the node's name (onnxruntime's
fused and NCHWc-rewritten graph, so names carry suffixes like `_nchwc`).
Pin it as kfuse is pinned (taskset) to compare.

    taskset -c 1 bench/zoo/.venv/bin/python bench/ort_node_profile.py bench/zoo/out/squeezenet1_1.onnx 1
"""
import collections
import json
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model, threads = sys.argv[1], int(sys.argv[2])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape], dtype=np.float32)
             for i in session.get_inputs()}
    for _ in range(10):
        session.run(None, feeds)
    for _ in range(50):
        session.run(None, feeds)
    trace = session.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    times = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            times[(e["name"][:-len("_kernel_time")], e["args"].get("op_name"))].append(e["dur"])
    rows = [(sorted(d)[len(d) // 2], name, op) for (name, op), d in times.items()]
    print(f"{model}: {sum(r[0] for r in rows)} us over {len(rows)} nodes (medians of 50 runs, {threads} threads)")
    for us, name, op in rows:
        print(f"{us:8d} us  {op:20s} {name}")


if __name__ == "__main__":
    main()
