#!/usr/bin/env bash
# Installs every Debian package kfuse needs to build and test. Idempotent:
# packages already present are skipped, so a second run does nothing.
set -euo pipefail

PACKAGES=(
  # build (g++ is also the cuda simulator's compiler at run time: --simulate;
  # its fibers need nothing beyond glibc)
  cmake ninja-build g++ ccache pkg-config
  # tests: GoogleTest, lit + FileCheck (llvm-14-tools), the PyTorch/ONNX oracle, a venv
  # for the onnx wheel whose node tests the suite runs (tests/onnx/onnx_wheel_node_tests.sh)
  libgtest-dev llvm-14-tools python3 python3-venv python3-numpy python3-torch python3-torchvision python3-onnx
  libonnx-testdata
  # the ISA matrix: generated code run as on an AVX2 and an SSE4.2 CPU (tests/isa)
  qemu-user
  # libraries
  llvm-14-dev libonnx-dev libprotobuf-dev protobuf-compiler libopenblas-dev
  # data-parallel training: Gloo collectives (runtime/comm/)
  libgloo-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev libffi-dev
  # fuzzing the package reader (clang + libFuzzer runtime), graph pictures
  clang-14 libclang-rt-14-dev graphviz
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
