#!/usr/bin/env bash
# Configures the ASan + UBSan build directory (default build-sanitize) that `make test-sanitize` and
# scripts/fuzz.sh share: clang, every object built with -fsanitize=address,undefined and
# -fno-sanitize-recover=all, the fuzz targets included, benchmarks off. -O1 (ASan's recommended level:
# a third of the build time of -O3 and most of its speed) with line tables for readable reports.
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
  -DKEF_SANITIZE=ON -DKEF_BUILD_FUZZ=ON -DKEF_BUILD_TESTS=ON -DKEF_BUILD_BENCH=OFF "$@"
