"""The Python package under mpirun (docs/python.md, docs/mpi.md): run as
`mpirun -np 2 python3 mpi_run.py WORKDIR CONFIG` by ctest (python.mpi). Every process makes the same
calls with comm=MPI.COMM_WORLD; rank 0 also makes them alone (comm=None) and the two must agree bit
for bit. Errors on any process must raise the same exception on every process, never hang. Exits 0
when every check passed on every process."""
import json
import os
import sys

import numpy as np
from mpi4py import MPI

import kef

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
work, config = sys.argv[1], sys.argv[2]
failures = []

LITE = {"type": "lite", "inducing_points": 40, "lambda_alpha": 1e-3}
KERNEL = {"type": "gaussian", "sigma": 1.3}
BASE = {"type": "gaussian", "std": 3.0}
TIMING = ("seconds", "evaluation_seconds", "proposals_per_second")


def check(name, ok, detail=""):
    if not ok:
        failures.append(f"rank {rank}: {name}: {detail}")


def without_timing(v, key=None):
    if isinstance(v, dict):
        return {k: without_timing(x, k) for k, x in v.items()
                if not any(k == t or k.endswith("." + t) for t in TIMING)}
    if isinstance(v, list) and key != "notes":
        return [without_timing(x) for x in v]
    return v if key != "notes" else None


def same_on_every_process(name, value):
    values = comm.allgather(value)
    check(name, all(v == values[0] for v in values), "the processes returned different values")


def raises_everywhere(name, call, error, needle):
    """call() must raise `error` containing `needle` on this process (so on every process)."""
    try:
        call()
    except error as e:
        check(name, needle in str(e), f"message without {needle!r}: {e}")
        same_on_every_process(name + " (message)", str(e))
        return
    except Exception as e:  # noqa: BLE001 - reported as a failure
        check(name, False, f"raised {type(e).__name__}: {e}")
        same_on_every_process(name + " (message)", "wrong exception")
        return
    check(name, False, "no exception")
    same_on_every_process(name + " (message)", "no exception")


# 1. kef.run on a pipeline file: the distributed run returns, on every process, results bitwise those
#    of the single-process run; only rank 0 wrote the output directory.
two = kef.run(config, output=os.path.join(work, "two"), threads=1, quiet=True, comm=comm)
same_on_every_process("run: results", json.dumps(without_timing(two), sort_keys=True))
if rank == 0:
    one = kef.run(config, output=os.path.join(work, "one"), threads=1, quiet=True)
    check("run: one process = two", without_timing(one) == without_timing(two),
          "results differ from the single-process run")
    check("run: rank 0 wrote", os.path.isfile(os.path.join(work, "two", "results.json")), "no results.json")
comm.Barrier()
check("run: only rank 0 wrote", len([d for d in os.listdir(work) if d.startswith("two")]) == 1,
      f"output directories: {sorted(os.listdir(work))}")

# 2. kef.fit on in-memory data (Fortran order: read in place): the same model on every process and as
#    one process, bitwise (its log density and score on held-out rows).
rng = np.random.default_rng(3)
z = rng.normal(size=(2400, 2))
X = np.asfortranarray(np.column_stack([z[:, 0], z[:, 1] + 0.5 * z[:, 0] ** 2]))
X_test = rng.normal(size=(100, 2))
model = kef.fit(X, LITE, KERNEL, BASE, seed=4, threads=1, quiet=True, comm=comm)
values = np.column_stack([model.log_density(X_test), model.score(X_test)])
same_on_every_process("fit: model", values.tobytes())
if rank == 0:
    alone = kef.fit(X, LITE, KERNEL, BASE, seed=4, threads=1, quiet=True)
    ref = np.column_stack([alone.log_density(X_test), alone.score(X_test)])
    check("fit: one process = two", np.array_equal(ref, values), "log density or score differ")

# 3. Errors: raised alike on every process, whichever process had the bad input.
raises_everywhere("fit: misspelt key",
                  lambda: kef.fit(X, dict(LITE, inducing_pionts=3), KERNEL, BASE, quiet=True, comm=comm),
                  kef.ConfigError, "inducing_points")
Y = X.copy()
if rank == 1:
    Y[5, 1] += 1e-9
raises_everywhere("fit: different data",
                  lambda: kef.fit(Y, LITE, KERNEL, BASE, quiet=True, comm=comm),
                  kef.DataError, "different data")
bad = os.path.join(work, f"missing-{rank}.toml")
with open(config) as f:
    text = f.read()
if rank == 1:  # only rank 1's pipeline names a missing data file
    text = text.replace('type = "synthetic/banana"\nn = 3000', 'type = "file"\npath = "no-such-file.csv"', 1)
    check("test set-up", "no-such-file.csv" in text, "the config's [data] table changed")
with open(bad, "w") as f:
    f.write(text)
raises_everywhere("run: missing data on rank 1",
                  lambda: kef.run(bad, output=os.path.join(work, "bad"), quiet=True, comm=comm),
                  kef.Error, "no-such-file.csv")
comm.Barrier()
check("run: failed run wrote nothing", not os.path.exists(os.path.join(work, "bad")), "bad/ exists")

everything = comm.allgather(failures)
if rank == 0:
    for fs in everything:
        for f in fs:
            print("FAIL:", f)
    ok = not any(everything)
    print("python.mpi:", "every check passed on 2 processes" if ok else "failed")
sys.exit(0 if not any(everything) else 1)
