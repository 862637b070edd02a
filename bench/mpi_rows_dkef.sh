#!/usr/bin/env bash
# DKEF on a .npy file: memory and time of one process (which holds the training split) against 2 MPI
# processes of one thread each that leave it in the file and read only the rows each step needs, and 2
# that hold it (`read_by_rows = false`) (docs/mpi.md, "Reading data by row ranges"). N rows of a bent D-dimensional cloud, M inducing points, a
# short stage 1 and stage 2 with q0 learning and no stack memory (its blocks read again at every step).
# Prints each run's wall time, fit time and peak RSS per process, and checks that the two runs wrote
# the same model bytes.
#   bash bench/mpi_rows_dkef.sh [BUILD_DIR] [N] [D] [M]
set -euo pipefail
build=${1:-build}
N=${2:-1000000} D=${3:-10} M=${4:-100}
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"
mpi_bench_setup "$build"
/usr/bin/python3 - "$N" "$D" <<'PY'
import sys
import numpy as np
n, d = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
X = rng.normal(size=(n, d))
X[:, 1] += 0.5 * X[:, 0] ** 2
np.save("rows.npy", X)
PY
cat > dkef.toml <<TOML
schema_version = 1
seed = 1
[data]
type = "file"
path = "rows.npy"
split = { test = 1000, validation = 1000 }
[[model]]
name = "dkef"
[model.estimator]
type = "dkef"
inducing_points = $M
max_steps = 20
eval_every = 10
stage2_steps = 5
stage2_memory_mb = 0
[model.kernel]
type = "gaussian"
sigma = 2.0
[model.base_measure]
type = "generalized_normal"
mean = 0.0
std = 3.0
beta = 2.0
[output]
plot = false
TOML
echo "== dkef on rows.npy: N=$N D=$D M=$M, 20 stage-1 steps, 5 stage-2 steps (q0 learns, no stack memory), --threads 1"
/usr/bin/time -f "%e s wall, %M KB max RSS" "$kef" run dkef.toml --threads 1 --quiet --output one 2> one.err > /dev/null
echo "1 process (holds the split): fit $(fit_seconds one/results.json dkef) s; $(tail -1 one.err)"
mpirun -np 2 --oversubscribe /usr/bin/time -f "%e s wall, %M KB max RSS" "$kef" run dkef.toml --threads 1 --output two \
  2> two.err > /dev/null
echo "2 processes: fit $(fit_seconds two/results.json dkef) s; each: $(grep 'max RSS' two.err | tr '\n' ';')"
grep "training split" two/log.txt
mpirun -np 2 --oversubscribe /usr/bin/time -f "%e s wall, %M KB max RSS" "$kef" run dkef.toml --threads 1 --output held \
  --set data.read_by_rows=false 2> held.err > /dev/null
echo "2 processes holding the split (read_by_rows = false): fit $(fit_seconds held/results.json dkef) s; each: $(grep 'max RSS' held.err | tr '\n' ';')"
cmp one/models/dkef/alpha.npy two/models/dkef/alpha.npy && cmp one/models/dkef/alpha.npy held/models/dkef/alpha.npy &&
  echo "the same model bytes"
