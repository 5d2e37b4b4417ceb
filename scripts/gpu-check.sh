#!/usr/bin/env bash
# The GPU-side check, for a person on a machine with an NVIDIA GPU (CUDA 13,
# CMake, ninja, g++; no network, no LLVM / ONNX / Protobuf / OpenBLAS):
#   1. configures and builds kfuse with the cuda target and without LLVM and
#      ONNX (models come from the C++ tracing frontend, tests/cuda/suite_models.cpp),
#      with the header-only dependencies and GoogleTest from third_party/
#      (scripts/bundle-third-party.sh) where the machine lacks them;
#   2. runs the NVRTC compile tests (every kernel of every suite model and op
#      case, for the device's architecture family) and the GPU tests (ctest
#      label gpu: kernels vs the interpreter, spiral training vs the cpu
#      target, CUDA Graph replay, launch counts);
#   3. runs bench/gpu_bench.py (kfuse vs PyTorch eager and torch.compile: step
#      times and launches) on the models in bench/gpu_models, which
#      `bench/gpu_bench.py prepare` writes on a machine with kfuse's ONNX
#      frontend; without them, or without a GPU, the summary says so;
#   4. writes results/<date>/summary.json and summary.md (device, test counts,
#      failures, the benchmark), which go to bench/results/ when committed.
#
#   scripts/gpu-check.sh [RESULTS_DIR]      (default bench/results/<UTC date>)
#
# scripts/gpu-check-bare-root.sh runs it, up to where a device is needed, in
# a bare Debian root with only what those machines have.
#
# Before copying the tree to the GPU machine (on the development machine):
#   scripts/bundle-third-party.sh
#   /usr/bin/python3 bench/gpu_bench.py prepare --kfuse build/bin/kfuse --out bench/gpu_models
set -euo pipefail
caller="$PWD"
cd "$(dirname "$0")/.."

# An absolute path from here on: a RESULTS_DIR given relative to where the
# script was started, or the default under bench/results/.
case "${1:-}" in
  "") results="$PWD/bench/results/$(date -u +%Y%m%d-%H%M%S)" ;;
  /*) results="$1" ;;
  *) results="$caller/$1" ;;
esac
build=build-gpu
mkdir -p "$results"

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi not found; the GPU tests will skip (they say why)" >&2
  device="none"
else
  device="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
fi

# The benchmark needs PyTorch: say at once when python3 has none (the build
# and the tests go on without it).
torch_version=""
if ! command -v python3 >/dev/null 2>&1; then
  python_note="no python3"
elif torch_version="$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"; then
  python_note="$(python3 --version 2>&1), torch $torch_version"
else
  python_note="$(python3 --version 2>&1), no torch"
fi
if [ -z "$torch_version" ]; then
  echo "gpu-check: $python_note: the benchmark against PyTorch will not run" >&2
fi

# The GPU machines have no nlohmann-json, CLI11, GoogleTest, zlib or OpenBLAS headers:
# take them from third_party/ (scripts/bundle-third-party.sh, run on a
# Debian machine with kfuse's dependencies, before copying the tree over).
third_party=()
if [ -d third_party ]; then
  third_party=(-DKFUSE_THIRD_PARTY_DIR=third_party)
elif [ ! -e /usr/include/nlohmann/json.hpp ]; then
  echo "gpu-check: no third_party/ and no system nlohmann-json: run scripts/bundle-third-party.sh on a machine that has kfuse's dependencies, then copy third_party/ here" >&2
  exit 1
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKFUSE_WITH_LLVM=OFF -DKFUSE_WITH_ONNX=OFF -DKFUSE_WITH_CUDA=ON "${third_party[@]}"
cmake --build "$build" --parallel "$(nproc)" --target nvrtc_compile_test cuda_codegen_test cuda_gpu_test kfuse

# The tests of the targets built above: cuda.* and gpu.*, less those of the
# simulator (label simulator), which run on the development machine.
status=0
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" -R '^(cuda|gpu)\.' -LE simulator \
  --output-junit "$results/ctest.xml" | tee "$results/ctest.log" || status=$?

# Counted on ctest's line per test: its closing lists name the skipped and
# failed tests again.
test_lines="$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$results/ctest.log" || true)"
passed=$(grep -c ' Passed ' <<<"$test_lines" || true)
skipped=$(grep -c '\*\*\*Skipped ' <<<"$test_lines" || true)
failed=$(( $(grep -c . <<<"$test_lines" || true) - passed - skipped ))

# The benchmark against PyTorch eager and torch.compile, on models prepared
# beforehand where ONNX is available (bench/gpu_bench.py prepare).
bench_note="ran: gpu_bench.md, gpu_bench.json"
if [ "$device" = none ]; then
  bench_note="not run: no GPU (bench/gpu_bench.py run --device cpu is its dry run)"
elif [ ! -f bench/gpu_models/manifest.json ]; then
  bench_note="not run: no bench/gpu_models (run bench/gpu_bench.py prepare on a machine with kfuse's ONNX frontend, then copy it here)"
elif [ -z "$torch_version" ]; then
  bench_note="not run: $python_note"
elif ! python3 bench/gpu_bench.py run --kfuse "$build/bin/kfuse" --models bench/gpu_models --out "$results"; then
  bench_note="failed: see the output above"
  status=1
fi

cat > "$results/summary.json" <<JSON
{
  "device": "$device",
  "build": "KFUSE_WITH_LLVM=OFF KFUSE_WITH_ONNX=OFF KFUSE_WITH_CUDA=ON",
  "tests": {"passed": $passed, "failed": $failed, "skipped": $skipped},
  "python": "$python_note",
  "benchmark": "$bench_note"
}
JSON
cat > "$results/summary.md" <<MD
# gpu-check $(date -u +%Y-%m-%dT%H:%MZ)

- device: $device
- build: KFUSE_WITH_LLVM=OFF KFUSE_WITH_ONNX=OFF KFUSE_WITH_CUDA=ON
- tests: $passed passed, $failed failed, $skipped skipped (ctest.log, ctest.xml)
- python: $python_note
- benchmark vs PyTorch eager / torch.compile: $bench_note
MD
echo "gpu-check: results in $results"
exit "$status"
