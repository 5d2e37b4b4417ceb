#!/usr/bin/env bash
# Builds kfuse and runs the whole test suite, installing whatever is missing
# first. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --parallel
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
