#!/usr/bin/env bash
# Builds kfuse and runs the whole test suite, installing whatever is missing
# first. This is the README's test command and what CI runs.
#
# The suite runs in two builds. First in one whose runtime poisons every
# buffer when its lifetime ends unless told otherwise
# (-DKFUSE_POISON_BY_DEFAULT=ON, runtime/poison.h), so any plan that reads a
# dead or overwritten buffer gives NaN and fails its test; then in the
# ordinary build, which switching back only relinks. The first pass skips
# what runs no plan: package_fuzz (fuzzes the package reader for a minute)
# and the cuda.* tests (NVRTC compilation; the simulated cuda device, whose
# tests poison buffers themselves), and the ISA matrix (isa.*: the tests
# that run generated CPU code, again under qemu-user as an AVX2 and an
# SSE4.2 CPU; tests/isa). The second pass runs those, the lit suite (every
# kfuse binary as shipped, end to end) and the test of the poisoning
# default itself; the rest of the suite passed in the stricter poisoned
# build, and running it again took a third of the suite's 30 minutes on a
# 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
configure() { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"; }
jobs="$(nproc)"

echo "== the suite with buffer poisoning on by default"
configure -DKFUSE_POISON_BY_DEFAULT=ON
cmake --build build --parallel
ctest --test-dir build --output-on-failure --parallel "$jobs" --exclude-regex '^(package_fuzz|cuda\.|isa\.)'

echo "== the ordinary build: the ISA matrix, cuda, the package fuzzer, lit"
configure -DKFUSE_POISON_BY_DEFAULT=OFF
cmake --build build --parallel
ctest --test-dir build --output-on-failure --parallel "$jobs" \
  --tests-regex '^(package_fuzz|lit|Poisoning\.DefaultFollowsTheBuild)$|^(cuda|isa)\.'

echo "== the runtime-only build (kfuse-run without the compiler)"
tests/build/runtime_only.sh . build build-runtime

# How much disk the build took: CI's machines have had little to spare.
echo "== build folders: $(du -sch build build-runtime | tail -1 | cut -f1); free: $(df -h --output=avail . | tail -1)"
