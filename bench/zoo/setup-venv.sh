#!/usr/bin/env bash
# Creates bench/zoo/.venv: an isolated venv (no system site packages) with a
# current PyTorch and the model libraries the zoo exports from, plus the ONNX
# tooling to inspect and cross-check the exported graphs. Idempotent: does
# nothing when the venv already imports everything.
#
#   bash bench/zoo/setup-venv.sh          # then: bench/zoo/.venv/bin/python bench/zoo/export.py
#
# The torch wheel from PyPI pulls the CUDA libraries (~4 GB). A package that
# fails to install is reported and skipped; export.py skips what needs it.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
py="$venv/bin/python"
mods=(torch torchvision timm transformers onnx onnxscript onnxruntime openvino)
check() { "$py" -c "import $(IFS=,; echo "${mods[*]}")" 2>/dev/null; }
if [[ -x "$py" ]] && check; then
  exit 0
fi
if [[ ! -x "$py" ]]; then
  /usr/bin/python3 -m venv "$venv" || {
    echo "setup-venv: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
fi
pip=("$py" -m pip install --disable-pip-version-check --progress-bar off)
"${pip[@]}" --upgrade pip setuptools wheel
# torch and torchvision together so pip picks matching versions.
"${pip[@]}" torch torchvision || echo "setup-venv: torch/torchvision failed" >&2
failed=()
for pkg in timm transformers onnx onnxscript onnxruntime openvino; do
  "${pip[@]}" "$pkg" || { echo "setup-venv: $pkg failed to install, continuing" >&2; failed+=("$pkg"); }
done
"$py" - <<'PY'
import importlib
for m in ["torch", "torchvision", "timm", "transformers", "onnx", "onnxscript",
          "onnxruntime", "openvino", "numpy"]:
    try:
        mod = importlib.import_module(m)
        v = getattr(mod, "__version__", None)
        if v is None and m == "openvino":
            v = mod.get_version()
        print(f"{m:12s} {v}")
    except Exception as e:  # noqa: BLE001
        print(f"{m:12s} MISSING ({type(e).__name__}: {e})")
PY
if ((${#failed[@]})); then echo "setup-venv: not installed: ${failed[*]}" >&2; fi
exit 0
