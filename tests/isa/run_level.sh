#!/bin/sh
# Runs one test of the ISA matrix: `run_level.sh LEVEL COMMAND...`. A level
# that is this machine's own is skipped (exit 77, the tests'
# SKIP_RETURN_CODE): the ordinary tests have just run that code natively,
# and under qemu they take minutes. Haswell's level (AVX2, FMA, F16C) is an
# AVX2 machine's own when it lacks AVX-512; Nehalem's (SSE4.2) is below
# every machine CI runs on.
level="$1"
shift
if [ "$level" = haswell ] && grep -qw avx2 /proc/cpuinfo && ! grep -qw avx512f /proc/cpuinfo; then
  echo "skipped: this machine is an AVX2 CPU without AVX-512, so the Haswell level is its own and ran natively"
  exit 77
fi
exec "$@"
