#!/usr/bin/env bash
# The benchmark: kfuse (cpu target) against PyTorch eager and onnxruntime on
# the CPU. Builds kfuse_bench, creates bench/.venv with onnxruntime if needed,
# then runs bench/run.py (its options pass through: --threads, --rounds,
# --round-seconds, --json). A few minutes on 2 cores.
#
#   bench/run.sh                 # build dir: $KFUSE_BUILD_DIR or build/
#   KFUSE_BUILD_DIR=build-llvm bench/run.sh --threads 2
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KFUSE_BUILD_DIR:-$root/build}"
[[ "$build" = /* ]] || build="$root/$build"
jobs="${KFUSE_JOBS:-2}"

"$root/bench/setup-venv.sh"
cmake -S "$root" -B "$build" -G Ninja -DKFUSE_WITH_LLVM=ON -DKFUSE_WITH_ONNX=ON >/dev/null
cmake --build "$build" --target kfuse_bench -j"$jobs" >/dev/null
exec "$root/bench/.venv/bin/python" "$root/bench/run.py" --kfuse-bench "$build/bench/kfuse_bench" "$@"
