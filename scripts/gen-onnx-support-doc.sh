#!/usr/bin/env bash
# Regenerates the generated parts of docs/onnx-support.md: the supported-op
# table (kfuse import --list-ops) and the conformance results of ONNX's
# backend-test folders (kfuse test-onnx). The onnx_conformance_* tests fail
# when the doc is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
kfuse=${KFUSE:-build/bin/kfuse}
data=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
/usr/bin/python3 tests/onnx/onnx_support_doc.py update "$kfuse" docs/onnx-support.md \
  "$data/node" "$data/pytorch-converted" "$data/pytorch-operator" "$data/simple"
