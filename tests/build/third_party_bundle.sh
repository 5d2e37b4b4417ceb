#!/bin/sh
# The GPU machines' build (scripts/gpu-check.sh) takes nlohmann-json, CLI11,
# GoogleTest and zlib's and OpenBLAS's headers from a bundle: bundle into a
# scratch folder, configure a cuda build without LLVM and ONNX against it, and
# check that every one of them resolves to the bundle, not to this machine's
# packages.
#   third_party_bundle.sh SOURCE_DIR SCRATCH_DIR
set -eu
src="$1"
scratch="$2"
rm -rf "$scratch"
mkdir -p "$scratch"
"$src/scripts/bundle-third-party.sh" "$scratch/bundle" >/dev/null
cmake -S "$src" -B "$scratch/build" -G Ninja -DKFUSE_WITH_LLVM=OFF -DKFUSE_WITH_ONNX=OFF -DKFUSE_WITH_CUDA=ON \
  -DKFUSE_THIRD_PARTY_DIR="$scratch/bundle" -DCMAKE_CXX_COMPILER_LAUNCHER= >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; exit 1; }
ninja="$scratch/build/build.ninja"
status=0
for dir in nlohmann_json/include cli11/include googletest/googletest/include zlib/include openblas/include; do
  if ! grep -q "isystem $scratch/bundle/$dir" "$ninja"; then
    echo "FAIL: nothing compiles against the bundled $dir" >&2
    status=1
  fi
done
# No target may see this machine's copies instead.
for leak in /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 /usr/lib/x86_64-linux-gnu/cmake/GTest; do
  if grep -q "$leak" "$scratch/build/CMakeCache.txt"; then
    echo "FAIL: the configure found $leak" >&2
    status=1
  fi
done
# A missing bundle is an error that says what to run (CMake wraps the
# message where the path's length puts it, hence the joined lines).
rm -rf "$scratch/bundle/cli11"
if cmake -S "$src" -B "$scratch/build2" -G Ninja -DKFUSE_WITH_LLVM=OFF -DKFUSE_WITH_ONNX=OFF \
     -DKFUSE_THIRD_PARTY_DIR="$scratch/bundle" >"$scratch/configure2.log" 2>&1; then
  echo "FAIL: configuring against an incomplete bundle succeeded" >&2
  status=1
elif ! tr -s ' \n' '  ' <"$scratch/configure2.log" | grep -q "cli11/include is missing (run scripts/bundle-third-party.sh)"; then
  echo "FAIL: the incomplete bundle's error does not say what is missing:" >&2
  cat "$scratch/configure2.log" >&2
  status=1
fi
[ "$status" = 0 ] && echo "third_party_bundle: ok"
rm -rf "$scratch"
exit "$status"
