#!/usr/bin/env bash
# Creates bench/.venv: Debian's Python (torch, onnx, numpy from the system
# site packages) plus onnxruntime from PyPI, the third engine of the
# benchmark. Idempotent: does nothing when the venv already imports it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import onnxruntime, torch" 2>/dev/null; then
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
# onnxruntime's wheels need numpy < 2 on this torch; keep Debian's numpy.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "onnxruntime>=1.16,<1.21"
"$venv/bin/python" -c "import onnxruntime, torch; print('onnxruntime', onnxruntime.__version__, 'torch', torch.__version__)"
