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
#   3. writes results/<date>/summary.json and summary.md (device, test counts,
#      failures), which go to bench/results/ when committed.
#
#   scripts/gpu-check.sh [RESULTS_DIR]      (default bench/results/<UTC date>)
#
# Not done yet (docs/cuda.md): the benchmark against PyTorch eager and
# torch.compile; the script says so in its summary rather than inventing numbers.
set -euo pipefail
cd "$(dirname "$0")/.."

results="${1:-bench/results/$(date -u +%Y%m%d-%H%M%S)}"
build=build-gpu
mkdir -p "$results"

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi not found; the GPU tests will skip (they say why)" >&2
  device="none"
else
  device="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
fi

# The GPU machines have no nlohmann-json, CLI11, GoogleTest or zlib headers:
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

status=0
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" -R '^(cuda|gpu)\.' \
  --output-junit "$PWD/$results/ctest.xml" | tee "$results/ctest.log" || status=$?

passed=$(grep -c 'Passed' "$results/ctest.log" || true)
failed=$(grep -cE '\*\*\*Failed|Exception|Timeout' "$results/ctest.log" || true)
skipped=$(grep -c 'Skipped' "$results/ctest.log" || true)

cat > "$results/summary.json" <<JSON
{
  "device": "$device",
  "build": "KFUSE_WITH_LLVM=OFF KFUSE_WITH_ONNX=OFF KFUSE_WITH_CUDA=ON",
  "tests": {"passed": $passed, "failed": $failed, "skipped": $skipped},
  "benchmark": null,
  "benchmark_note": "not implemented: kfuse has no profile/benchmark command for the cuda target yet"
}
JSON
cat > "$results/summary.md" <<MD
# gpu-check $(date -u +%Y-%m-%dT%H:%MZ)

- device: $device
- build: KFUSE_WITH_LLVM=OFF KFUSE_WITH_ONNX=OFF KFUSE_WITH_CUDA=ON
- tests: $passed passed, $failed failed, $skipped skipped (ctest.log, ctest.xml)
- benchmark vs PyTorch eager / torch.compile: not implemented yet
MD
echo "gpu-check: results in $results"
exit "$status"
