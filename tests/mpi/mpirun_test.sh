#!/usr/bin/env bash
# `mpirun -np 2 kef run` against the single-process run, through the real kef command.
#   same CONFIG: results.json equal bit for bit (every number as written, timing fields removed) and
#                every other output file (saved models, plot) byte for byte.
#   killed CONFIG: rank 1 is killed (SIGKILL) two seconds into a long run: mpirun must end rank 0 and
#                fail within the timeout, naming the signal, and leave no output directory.
#   fails CONFIG NEEDLE: exit status 2 from mpirun, the error (containing NEEDLE) printed once, no
#                output directory, and no process left behind (the command returns at all).
#   rows CONFIG: the data read by rows (kef/training_rows.hpp): CONFIG's data.path set to an NPY file and
#                to the same rows as CSV, written here; each compared as `same` does, and two/log.txt must
#                say the training split was read by rows; so must it with `standardize` and with
#                `whiten`; then with `dequantize` the processes must fall back to holding the whole
#                split (and say why), with the same results as one. NEEDLE `npy-only`: the CSV file's
#                run must hold the split instead (an estimator that reads scattered rows, DKEF).
#   disagree CONFIG: processes that read different inputs (each its own copy of CONFIG beside a data
#                file rows.npy): a value set differently on one process (--set, as a stale copy of the
#                pipeline would have it), then data files of the same shape with different values; each
#                must end every process with exit status 2 before any work, the error naming the key
#                or the files printed once, and no output directory. The same copies with the same
#                data must run.
# Usage: mpirun_test.sh MODE KEF MPIEXEC WORKDIR CONFIG [NEEDLE]
set -euo pipefail
mode=$1 kef=$2 mpiexec=$3 work=$4 config=$5 needle=${6:-}
rm -rf "$work"
mkdir -p "$work"
cd "$work"
mpi=("$mpiexec" -np 2 --oversubscribe)
# OpenMPI refuses to start as root unless told twice (CI containers run as root).
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# No network interface is needed between processes of one machine: shared memory and self only.
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1

# The numbers of results.json (a JSON number is written with every digit kef prints, 17 significant),
# without the fields that measure time (and the durations notes quote).
strip_timing() {
  /usr/bin/python3 - "$1" <<'PY'
import json, re, sys
TIMING = ("seconds", "evaluation_seconds", "proposals_per_second")
def timing(key):  # also a named evaluation's metric, "NAME.proposals_per_second"
    return any(key == t or key.endswith("." + t) for t in TIMING)
def strip(v, key=None):
    if key == "notes" and isinstance(v, list):  # durations quoted in notes ("..., 0.0087 s")
        return [re.sub(r"\b[0-9.]+(e[-+]?[0-9]+)? s\b", "T s", x) if isinstance(x, str) else x for x in v]
    if isinstance(v, dict):
        return {k: strip(x, k) for k, x in v.items() if not timing(k)}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
with open(sys.argv[1]) as f:
    doc = json.load(f)
print(json.dumps(strip(doc), sort_keys=True, indent=1))
PY
}

# `same`'s comparison, in the current directory, with extra `kef run` arguments.
compare_runs() {
    local f
    rm -rf one two
    timeout 600 "$kef" run "$config" --threads 1 --quiet --output one "$@" > one.out
    timeout 600 "${mpi[@]}" "$kef" run "$config" --threads 1 --quiet --output two "$@" > two.out
    [ -f one/results.json ] && [ -f two/results.json ] || { echo "FAIL: a run wrote no results.json"; exit 1; }
    grep -q '"status": "complete"' two/results.json || { echo "FAIL: the distributed run did not complete"; exit 1; }
    strip_timing one/results.json > one.json
    strip_timing two/results.json > two.json
    if ! diff one.json two.json; then echo "FAIL: results.json differs between 1 and 2 processes"; exit 1; fi
    # Every other file but the log (which holds times), byte for byte: the saved models, the plot.
    (cd one && find . -type f ! -name results.json ! -name log.txt | sort) > one.files
    (cd two && find . -type f ! -name results.json ! -name log.txt | sort) > two.files
    diff one.files two.files || { echo "FAIL: the two runs wrote different files"; exit 1; }
    [ -s one.files ] || { echo "FAIL: no saved model to compare"; exit 1; }
    while read -r f; do
      cmp "one/$f" "two/$f" || { echo "FAIL: $f differs between 1 and 2 processes"; exit 1; }
    done < one.files
    # Only rank 0 prints the summary.
    [ "$(grep -c '^results: ' two.out)" -eq 1 ] || { echo "FAIL: the summary was not printed once"; cat two.out; exit 1; }
    echo "same: $(wc -l < one.files) files and results.json identical"
}

case "$mode" in
  same)
    compare_runs
    ;;
  rows)
    # 4001 rows of a bent, heteroscedastic 2-D cloud (an odd count: the processes' shares differ).
    /usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(3)
x = rng.normal(size=4001)
X = np.c_[x, 0.5 * x ** 2 + (0.3 + 0.2 * np.abs(x)) * rng.normal(size=4001)]
np.save("rows.npy", X)
np.savetxt("rows.csv", X, delimiter=",", header="x0,x1", comments="", fmt="%.17g")  # the NPY file's column names
PY
    for data_file in rows.npy rows.csv; do
      compare_runs --set "data.path=$PWD/$data_file"
      if [ "$needle" = "npy-only" ] && [ "$data_file" = rows.csv ]; then
        # An estimator that reads scattered rows at every step holds the split of a CSV file.
        grep -q "every process holds the whole training split (estimator .* reads scattered training rows" two/log.txt ||
          { echo "FAIL: $data_file: the run did not hold the split of a CSV file, or did not say why"; cat two/log.txt; exit 1; }
      else
        grep -q "the training split is read by rows" two/log.txt ||
          { echo "FAIL: $data_file: the distributed run did not read the training split by rows"; cat two/log.txt; exit 1; }
      fi
      strip_timing two/results.json | grep -v '"path"\|provenance\|rows\.' > "two-$data_file.json"
      rm -rf "models-$data_file" && cp -r two/models "models-$data_file"
    done
    # The two files hold the same rows (%.17g round-trips): the fits must be the same too.
    grep -q '"fssd' two-rows.npy.json || { echo "FAIL: no FSSD result to compare in two-rows.npy.json"; exit 1; }
    diff two-rows.npy.json two-rows.csv.json || { echo "FAIL: the NPY and CSV files gave different results"; exit 1; }
    diff -r models-rows.npy models-rows.csv || { echo "FAIL: the NPY and CSV files gave different models"; exit 1; }
    # standardize and whiten map the rows as they are read (their statistics read in blocks).
    for step in standardize whiten; do
      compare_runs --set "data.path=$PWD/rows.npy" --set "data.$step=true"
      grep -q "the training split is read by rows" two/log.txt ||
        { echo "FAIL: with $step the distributed run did not read the training split by rows"; cat two/log.txt; exit 1; }
    done
    compare_runs --set "data.path=$PWD/rows.npy" --set data.dequantize=true
    grep -q "every process holds the whole training split (.dequantize. needs the whole training split)" two/log.txt ||
      { echo "FAIL: with dequantize the run did not fall back, or did not say why"; cat two/log.txt; exit 1; }
    echo "rows: NPY and CSV read by rows, standardized and whitened too, and the fallback, identical to one process"
    ;;
  fails)
    set +e
    timeout 300 "${mpi[@]}" "$kef" run "$config" --threads 1 --quiet --output out > out.txt 2> err.txt
    status=$?
    set -e
    cat err.txt
    [ "$status" -eq 2 ] || { echo "FAIL: mpirun exited with $status, expected 2"; exit 1; }
    [ "$(grep -c "$needle" err.txt)" -eq 1 ] || { echo "FAIL: the error naming '$needle' was not printed exactly once"; exit 1; }
    [ ! -e out ] || { echo "FAIL: a failed run left an output directory"; exit 1; }
    echo "fails: exit 2, one message"
    ;;
  disagree)
    /usr/bin/python3 - <<'PY'
import numpy as np, os
rng = np.random.default_rng(5)
for rank in (0, 1):
    os.makedirs(f"rank{rank}", exist_ok=True)
    np.save(f"rank{rank}/rows.npy", rng.normal(size=(300, 2)))
PY
    cp "$config" rank0/pipeline.toml
    cp "$config" rank1/pipeline.toml
    # Each process runs its own copy of the pipeline (and so reads the data beside it), with ARGS added
    # on rank 1 only; every process's exit status is kept in status.RANK. mpirun waits for both
    # (it would otherwise end the other process as soon as one exits with a failure).
    run_each() {
      rm -rf out status.0 status.1
      set +e
      OMPI_MCA_orte_abort_on_non_zero_status=0 timeout 300 "${mpi[@]}" bash -c \
        'r=$OMPI_COMM_WORLD_RANK; extra=(); if [ "$r" = 1 ]; then extra=("${@:2}"); fi
         "$1" run "rank$r/pipeline.toml" --threads 1 --quiet --output out "${extra[@]}"; s=$?
         echo $s > "status.$r"; exit $s' wrapper "$kef" "$@" > out.txt 2> err.txt
      status=$?
      set -e
      cat err.txt
    }
    # NEEDLE...: exit 2 from both processes (mpirun's own status says nothing when it waits for both),
    # one message holding every NEEDLE.
    expect_refused() {
      [ "$status" -ne 124 ] || { echo "FAIL: the processes hung"; exit 1; }
      for r in 0 1; do
        [ "$(cat "status.$r" 2> /dev/null)" = 2 ] || { echo "FAIL: rank $r exited with $(cat "status.$r" 2> /dev/null), expected 2"; exit 1; }
      done
      [ "$(grep -c 'distributed run: the processes' err.txt)" -eq 1 ] || { echo "FAIL: the error was not printed exactly once"; exit 1; }
      for n in "$@"; do
        grep -qF -- "$n" err.txt || { echo "FAIL: the error does not say '$n'"; exit 1; }
      done
      [ ! -e out ] || { echo "FAIL: a refused run left an output directory"; exit 1; }
    }
    # The same pipeline on different data.
    run_each
    expect_refused "data error: distributed run: the processes were given different data" \
      "data.path is $PWD/rank0/rows.npy" "on rank 0 and $PWD/rank1/rows.npy" "on rank 1"
    # A value differs (and the data too: the pipeline is compared first, and named).
    run_each --set model[0].kernel.sigma=1.6
    expect_refused "config error: distributed run: the processes resolved different pipelines" \
      '`model[0].kernel.sigma` is 1.5 on rank 0 and 1.6 on rank 1'
    # The same data on both: the run completes.
    cp rank0/rows.npy rank1/rows.npy
    run_each
    [ "$status" -eq 0 ] && [ "$(cat status.0)" = 0 ] && [ "$(cat status.1)" = 0 ] ||
      { echo "FAIL: processes that agree did not run (status $status)"; exit 1; }
    grep -q '"status": "complete"' out/results.json || { echo "FAIL: the agreeing run did not complete"; exit 1; }
    echo "disagree: a different value and different data refused on both processes, naming them"
    ;;
  killed)
    set +e
    # $$ of the wrapper shell is kef's pid after exec.
    timeout 300 "${mpi[@]}" bash -c \
      'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 2; kill -9 $$) & fi; exec "$@"' wrapper \
      "$kef" run "$config" --threads 1 --quiet --output out > out.txt 2> err.txt
    status=$?
    set -e
    cat err.txt
    [ "$status" -ne 124 ] || { echo "FAIL: the run hung after a process was killed"; exit 1; }
    [ "$status" -ne 0 ] || { echo "FAIL: mpirun succeeded although a process was killed"; exit 1; }
    grep -q "signal 9" err.txt || { echo "FAIL: no message names the killed process"; exit 1; }
    [ ! -e out ] || { echo "FAIL: a killed run left an output directory"; exit 1; }
    echo "killed: mpirun exited with $status, no output"
    ;;
  *)
    echo "usage: mpirun_test.sh same|rows|killed|fails|disagree KEF MPIEXEC WORKDIR CONFIG [NEEDLE]" >&2
    exit 2
    ;;
esac
