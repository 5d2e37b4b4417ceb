#!/bin/sh
# Fuzzes the package reader for a bounded time, starting from a package
# kfuse compiles now (so the seed always has the current format).
#   run_fuzzer.sh FUZZER KFUSE SOURCE_DIR WORK_DIR SECONDS
set -eu
fuzzer=$(realpath "$1") kfuse=$2 src=$3 work=$4 seconds=$5
rm -rf "$work" && mkdir -p "$work/seeds" "$work/corpus"
"$kfuse" compile "$src/examples/mlp/mlp.kir" -o "$work/seeds/mlp.kfpkg" --threads=1 > /dev/null
"$kfuse" compile "$src/tests/lit/Inputs/train/tiny.kir" --train --optimizer=adam -o "$work/seeds/tiny_train.kfpkg" \
  --threads=1 > /dev/null
cd "$work"
# -rss_limit_mb: a hostile size field must not make the reader allocate
# gigabytes; -timeout: nor spin.
exec "$fuzzer" -max_total_time="$seconds" -seed=1 -rss_limit_mb=2048 -timeout=10 -max_len=1048576 \
  -print_final_stats=1 corpus seeds
