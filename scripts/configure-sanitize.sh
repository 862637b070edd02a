#!/usr/bin/env bash
# Configures the ASan + UBSan build directory (default build-sanitize) that `make test-sanitize` and
# scripts/fuzz.sh share: clang, every object built with -fsanitize=address,undefined and
# -fno-sanitize-recover=all, the fuzz targets included, benchmarks off. -O1 (ASan's recommended level:
# a third of the build time of -O3 and most of its speed) with line tables for readable reports.
# The test programs' own sources at -O0 (KEF_TEST_OPTIMIZATION): under the sanitizers clang compiles a
# test source at -O1 in twice the time of -O0 (column_roles_test.cpp: 39.6 s against 19.5 s), and the
# tests spend their time in libkef and the plugins, which keep -O1. Measured on the whole suite (unity
# build, idle machine, 2026-12-05): -O0 test code compiled in 614 s of CPU against 1144 s at -O1 and ran
# in 557 s of wall time against 447 s, a net gain of about 155 s of CI's wall time on 2 cores.
# Extra arguments are passed to cmake (-DCMAKE_CXX_COMPILER_LAUNCHER=ccache, for instance).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sanitize}
[ $# -gt 0 ] && shift
if ! command -v clang++ > /dev/null; then
  echo "configure-sanitize.sh: clang++ not found; run scripts/install-deps.sh (it installs clang)" >&2
  exit 2
fi
flags="-O1 -gline-tables-only -DNDEBUG"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
  -DKEF_SANITIZE=ON -DKEF_BUILD_FUZZ=ON -DKEF_BUILD_TESTS=ON -DKEF_BUILD_BENCH=OFF -DKEF_TEST_OPTIMIZATION=-O0 "$@"
