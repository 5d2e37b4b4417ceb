#!/usr/bin/env bash
# Regenerates the generated parts of docs/onnx-support.md: the supported-op
# table (kfuse import --list-ops) and the conformance results of ONNX's
# backend-test folders (kfuse test-onnx): Debian's libonnx-testdata and the
# node tests of the pinned onnx wheel (written into the build folder by
# tests/onnx/onnx_wheel_node_tests.sh, which this runs first). The
# onnx_conformance_* tests fail when the doc is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${KFUSE_BUILD_DIR:-build}
kfuse=${KFUSE:-$build/bin/kfuse}
data=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
version=$(sed -n 's/^KFUSE_ONNX_WHEEL_VERSION:STRING=//p' "$build/CMakeCache.txt")
tests/onnx/onnx_wheel_node_tests.sh "$build/tests/onnx/onnx-wheel" "$version"
/usr/bin/python3 tests/onnx/onnx_support_doc.py update "$kfuse" docs/onnx-support.md \
  "$data/node" "$data/pytorch-converted" "$data/pytorch-operator" "$data/simple" \
  "$build/tests/onnx/onnx-wheel/onnx-$version-node"
