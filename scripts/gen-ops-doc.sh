#!/usr/bin/env bash
# Regenerates the op table of docs/ops.md from the registry (kfuse ops --markdown).
set -euo pipefail
cd "$(dirname "$0")/.."
kfuse=${KFUSE:-build/bin/kfuse}
tmp=$(mktemp)
sed '/^| `/d' docs/ops.md > "$tmp"
"$kfuse" ops --markdown >> "$tmp"
mv "$tmp" docs/ops.md
