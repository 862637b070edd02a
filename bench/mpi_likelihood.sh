#!/usr/bin/env bash
# Importance sampling of a DKEF-sized model's normaliser on 1 and on 2 MPI processes of one thread
# each (docs/mpi.md): a deep-kernel lite model (R = 3 networks of L = 3 layers of
# width W = 30, M = 300 inducing points, D = 11, q0 = N(0, 2² I)) fitted by a few DKEF steps on
# synthetic Gaussian data, then `log_likelihood` method `importance` with P proposals (no check, no
# bias bound: only Ẑ's proposals are timed). Prints proposals per second (results.json's
# proposals_per_second), the partial results rank 0 received, and checks that log Ẑ is the same
# number in both runs.
#   bash bench/mpi_likelihood.sh [BUILD_DIR] [P] [RUNS]   (RUNS: "1,2" default, or "1" or "2")
set -euo pipefail
build=${1:-build}
P=${2:-10000000}
runs=${3:-1,2}
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"
mpi_bench_setup "$build"
cat > ll.toml <<TOML
schema_version = 1
seed = 1
[data]
type = "synthetic/gaussian"
dim = 11
n = 3000
split = { test = 500, validation = 500 }
[[model]]
name = "dkef"
[model.estimator]
type = "dkef"
inducing_points = 300
max_steps = 10
stage2_steps = 5
[model.kernel]
type = "deep"
components = 3
layers = 3
width = 30
[model.base_measure]
type = "gaussian"
std = 2.0
[[evaluate]]
type = "log_likelihood"
method = "importance"
check = "none"
bias_bound = false
min_effective_samples = 0
samples = $P
[output]
plot = false
TOML
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['models']['dkef']['metrics'][sys.argv[2]])" "$1" "$2"; }
echo "== log_likelihood, method importance, $P proposals, DKEF-sized deep kernel (D = 11, M = 300), --threads 1"
if [[ ",$runs," == *",1,"* ]]; then
  /usr/bin/time -f "%e s wall" "$kef" run ll.toml --threads 1 --quiet --output one 2> one.err > /dev/null || { cat one.err; exit 1; }
  echo "1 process:   $(field one/results.json proposals_per_second) proposals/s, log Z $(field one/results.json log_normalizer); $(tail -1 one.err)"
fi
if [[ ",$runs," == *",2,"* ]]; then
  /usr/bin/time -f "%e s wall" mpirun -np 2 --oversubscribe "$kef" run ll.toml --threads 1 --output two 2> two.err > /dev/null || { cat two.err; exit 1; }
  echo "2 processes: $(field two/results.json proposals_per_second) proposals/s, log Z $(field two/results.json log_normalizer); $(tail -1 two.err)"
  grep "distributed run" two.err || true
fi
if [ -d one ] && [ -d two ]; then
  if [ "$(field one/results.json log_normalizer)" = "$(field two/results.json log_normalizer)" ]; then
    echo "log Z: the same number"
  else echo "log Z: DIFFERS"; exit 1; fi
fi
