#!/usr/bin/env bash
# The main job: builds kfuse (installing whatever is missing first) and runs
# the training demo: a 3-class spiral, an MLP trained for 1000 full-batch Adam
# steps, the whole training step compiled once into fused kernels. It prints
# the loss every 100 epochs, the final accuracy, and where the IR around each
# pass of the compilation was written.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --parallel --target example_spiral

rm -rf build/spiral-ir-dumps
build/bin/example_spiral --dump-dir build/spiral-ir-dumps "$@"
ls build/spiral-ir-dumps
