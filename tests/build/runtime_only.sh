#!/bin/sh
# The runtime-only configuration (-DKFUSE_RUNTIME_ONLY=ON: ir/, exec/,
# runtime/ and kfuse-run, no compiler) built from scratch, then used: a
# package the full build compiles runs in the runtime-only kfuse-run to the
# bits `kfuse run MODEL` gives, and the binary links neither LLVM, NVRTC
# nor protobuf, nor the gradient rules.
#
#   runtime_only.sh SOURCE_DIR FULL_BUILD_DIR RUNTIME_BUILD_DIR
set -eu
src=$1
full=$2
rt=$3
mkdir -p "$rt"
cmake -S "$src" -B "$rt" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKFUSE_RUNTIME_ONLY=ON > "$rt/configure.log" 2>&1 ||
  { cat "$rt/configure.log"; exit 1; }
cmake --build "$rt" --parallel "$(nproc)" > "$rt/build.log" 2>&1 || { tail -50 "$rt/build.log"; exit 1; }

work=$rt/check
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 -c "import numpy as np; np.save('$work/x.npy', np.random.RandomState(0).randn(256, 2).astype(np.float32))"
"$full/bin/kfuse" compile "$src/examples/mlp/mlp.kir" -o "$work/mlp.kfpkg" > /dev/null
"$full/bin/kfuse" run "$src/examples/mlp/mlp.kir" --input x="$work/x.npy" --output-dir "$work/jit" 2> /dev/null
"$rt/bin/kfuse-run" "$work/mlp.kfpkg" --input x="$work/x.npy" --output-dir "$work/rt"
cmp "$work/jit/probs.npy" "$work/rt/probs.npy"

if ldd "$rt/bin/kfuse-run" | grep -Ei 'llvm|nvrtc|protobuf'; then
  echo "runtime_only: kfuse-run links a compiler library"
  exit 1
fi
# Nor the compiler's own code: the gradient rules and their builder
# (passes/gradients/) are the part of an op's definition only autodiff
# reads.
if nm -C "$rt/bin/kfuse-run" | grep -q 'GradBuilder\|GradientRules'; then
  echo "runtime_only: kfuse-run links the gradient rules"
  exit 1
fi
size=$(stat -c %s "$rt/bin/kfuse-run")
echo "runtime_only: kfuse-run is $size bytes, runs a package to the compiler's bits and links no compiler library" \
  "nor gradient rule"
