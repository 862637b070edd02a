#!/usr/bin/env bash
# The kernel adaptive HMC study (experiments/kahmc/README.md): builds bench_kahmc and the
# plugins it loads, then prints the table (a few minutes on 2 cores).
#   bash experiments/kahmc/kahmc-study.sh [BUILD_DIR] [SEEDS] [THREADS]
set -euo pipefail
build=${1:-build}
seeds=${2:-3}
threads=${3:-2}
cmake --build "$build" --target bench_kahmc kef_plugin_synthetic kef_plugin_gaussian
nice "$build/bin/bench_kahmc" "$seeds" "$threads"
