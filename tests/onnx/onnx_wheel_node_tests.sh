#!/bin/sh
# ONNX's newest node tests, from the onnx wheel on PyPI: installs the pinned
# onnx into a venv under the build folder (once; later runs reuse it), then
# writes its node tests as backend-test folders (gen_node_tests.py), also
# once per version. A CTest fixture (tests/onnx/CMakeLists.txt).
#
#   onnx_wheel_node_tests.sh OUT_DIR ONNX_VERSION
# writes OUT_DIR/venv and OUT_DIR/onnx-<version>-node/.
set -eu
out=$1
version=$2
here=$(cd "$(dirname "$0")" && pwd)
venv=$out/venv
tests=$out/onnx-$version-node
mkdir -p "$out"
if ! "$venv/bin/python" -c "import onnx, sys; sys.exit(onnx.__version__ != '$version')" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "onnx==$version"
fi
if [ ! -f "$tests/.complete" ]; then
  "$venv/bin/python" "$here/gen_node_tests.py" "$tests"
  touch "$tests/.complete"
fi
echo "onnx $version node tests: $tests"
