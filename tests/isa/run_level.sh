#!/bin/sh
# Runs one test of the ISA matrix: `run_level.sh [--highest] LEVEL COMMAND...`.
#
# A level that is this machine's own is skipped (exit 77, the tests'
# SKIP_RETURN_CODE): the ordinary tests have just run that code natively,
# and under qemu they take minutes. Haswell's level (AVX2, FMA, F16C) is an
# AVX2 machine's own when it lacks AVX-512; Nehalem's (SSE4.2) is below
# every machine CI runs on.
#
# --highest: the test runs at the highest level emulated on this machine
# only. Such tests (packages, lit, ONNX's models) run the code the
# code-generator tests run at every level, end to end; an AVX-512 machine
# runs them at Haswell's level, an AVX2 machine at Nehalem's, so CI's two
# kinds of machine cover both levels between them without either running
# them twice (about three minutes of two cores per level).
highest=no
if [ "$1" = --highest ]; then
  highest=yes
  shift
fi
level="$1"
shift
avx2_only=no
if grep -qw avx2 /proc/cpuinfo && ! grep -qw avx512f /proc/cpuinfo; then avx2_only=yes; fi
if [ "$level" = haswell ] && [ "$avx2_only" = yes ]; then
  echo "skipped: this machine is an AVX2 CPU without AVX-512, so the Haswell level is its own and ran natively"
  exit 77
fi
if [ "$highest" = yes ] && [ "$level" = nehalem ] && grep -qw avx512f /proc/cpuinfo; then
  echo "skipped: an end-to-end test, run at the Haswell level on this AVX-512 machine (AVX2 machines run it at Nehalem's)"
  exit 77
fi
exec "$@"
