"""What kfuse plans for a model's training step, read through `kfuse stats`."""
import json
import subprocess


def reference_op_failure(kfuse, model, optimizer):
    """Why the training step of `model` (cross-entropy, `optimizer`) falls
    short of running every op as generated code or a library call: kfuse
    stats failing, or the reference ops its plan still runs; None when it
    runs none."""
    cmd = [kfuse, "stats", model, "--train", "--loss=cross_entropy", "--optimizer=" + optimizer, "--json"]
    stats = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if stats.returncode != 0:
        return "kfuse stats failed (%d):\n%s" % (stats.returncode, stats.stdout)
    count = json.loads(stats.stdout)["fused"]["reference_ops"]
    return "the training step runs %d reference ops" % count if count else None
