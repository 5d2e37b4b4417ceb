#!/usr/bin/env bash
# Copies the header-only and source dependencies that kfuse's runtime, tools
# and tests need beyond a compiler and CUDA (nlohmann-json, CLI11,
# GoogleTest) from this Debian machine into a folder, for a machine that
# lacks them and has no network (and zlib's headers: the library itself,
# libz.so.1, is on every system; and OpenBLAS's, for the GEMM declarations
# of runtime/blas.h: the library is opened at run time) (the GPU machines of
# scripts/gpu-check.sh).
# Build there with -DKFUSE_THIRD_PARTY_DIR=FOLDER (cmake/third_party.cmake);
# gpu-check.sh does so when third_party/ exists.
#
#   scripts/bundle-third-party.sh [FOLDER]     (default third_party/, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-third_party}"

need() { [ -e "$1" ] || { echo "bundle-third-party: $1 not found (install $2: scripts/install-deps.sh)" >&2; exit 1; }; }
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/include/CLI/CLI.hpp libcli11-dev
need /usr/src/googletest/CMakeLists.txt googletest
need /usr/include/zlib.h zlib1g-dev
arch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
need "/usr/include/$arch/cblas.h" libopenblas-dev

# Assemble beside the destination and move into place, so an interrupted
# run never leaves a half-filled folder that a build would take.
tmp="$(mktemp -d "${out%/}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/nlohmann_json/include" "$tmp/cli11/include" "$tmp/zlib/include" "$tmp/openblas/include"
cp /usr/include/zlib.h /usr/include/zconf.h "$tmp/zlib/include/"
# cblas.h is an alternatives link into openblas-pthread/, beside the
# openblas_config.h it includes.
cblas="$(readlink -f "/usr/include/$arch/cblas.h")"
cp "$cblas" "$tmp/openblas/include/cblas.h"
if [ -e "$(dirname "$cblas")/openblas_config.h" ]; then cp "$(dirname "$cblas")/openblas_config.h" "$tmp/openblas/include/"; fi
cp -r /usr/include/nlohmann "$tmp/nlohmann_json/include/"
cp -r /usr/include/CLI "$tmp/cli11/include/"
cp -r /usr/src/googletest "$tmp/googletest"
cat > "$tmp/VERSIONS" <<V
nlohmann-json3-dev $(dpkg-query -W -f='${Version}' nlohmann-json3-dev 2>/dev/null || echo unknown)
libcli11-dev $(dpkg-query -W -f='${Version}' libcli11-dev 2>/dev/null || echo unknown)
googletest $(dpkg-query -W -f='${Version}' googletest 2>/dev/null || echo unknown)
zlib1g-dev $(dpkg-query -W -f='${Version}' zlib1g-dev 2>/dev/null || echo unknown)
libopenblas-dev $(dpkg-query -W -f='${Version}' libopenblas-dev 2>/dev/null || echo unknown)
V
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "bundle-third-party: wrote $out ($(du -sh "$out" | cut -f1)); build with -DKFUSE_THIRD_PARTY_DIR=$out"
