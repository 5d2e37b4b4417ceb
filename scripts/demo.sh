#!/usr/bin/env bash
# The main job: builds kfuse (installing whatever is missing first) and runs
# the simplification pipeline on the example MLP, printing the IR after each
# pass and dumping one numbered, parseable file per pass.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --parallel --target kfuse

dump=build/demo-dumps
rm -rf "$dump"
build/bin/kfuse opt examples/mlp/mlp.kir --passes=constant-fold,canonicalize,cse,dce \
  --print-ir-after-all --dump-ir-dir="$dump" --time-passes
echo
echo "IR dumps, one per pass: $dump/"
ls "$dump"
