#!/usr/bin/python3
"""The aggregated tests' headline power experiments, kef beside the reference NumPy implementations.

Four experiments, each a power curve of kef's test and of the reference's on the same data sets:

- ``mmd-1d``, ``mmd-2d``: MMDAgg (kef.mmdagg; antoninschrab/mmdagg, mmdagg/np.py), a uniform sample
  on [0, 1]^d against a sample of the perturbed uniform density of Schrab et al. (JMLR 2023, Eq. 17)
  with P perturbations per dimension; the x axis is P.
- ``hsic``: HSICAgg (kef.hsicagg; antoninschrab/agginc's HSICAggInc with all pairs, R = N − 1), the
  two coordinates of a sample of the perturbed uniform density on [0, 1]² (uniform marginals,
  dependent unless the amplitude is 0); the x axis is the perturbation amplitude c.
- ``ksd-rbm``: KSDAgg (kef.ksdagg_scores; antoninschrab/ksdagg, ksdagg/np.py), samples of a
  Gaussian–Bernoulli RBM whose weight matrix B is perturbed by Gaussian noise of sd σ, against the
  unperturbed RBM's score (Schrab, Guedj and Gretton, NeurIPS 2022, after Liu et al. 2016); the x axis
  is σ.

Both tests of a repetition see the same data and the same seed (their draws still differ: each has
its own random stream). The repetitions of a point are split into groups; the power of each group
gives the sd over groups drawn as a band. Writes into --out: rejections.csv (one row per experiment,
x, implementation and group), agreement.csv (kef against the reference per point, with the Monte
Carlo sd of the difference), <experiment>-kef.csv and <experiment>-reference.csv (x, y, lower, upper
for `kef lineplot`), <experiment>.png, and timings.csv.

    aggregated_tests.py --mmdagg DIR --ksdagg DIR --agginc DIR [--quick] [--out DIR]

DIR is a checkout of each reference (the directory holding mmdagg/np.py, ksdagg/np.py, agginc/np.py);
the references are not part of kef. kef's Python package must be importable (PYTHONPATH=build/python).
"""
import argparse
import csv
import importlib.util
import math
import os
import subprocess
import sys
import time
import types

# One BLAS thread for the reference, one worker thread for kef: the comparison runs on one core each,
# and the machine's other core stays free. Set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.summary import mean_sd  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ALPHA = 0.05
# The MMDAgg paper's draws (B1 = B2 = 500, B3 = 100), used by every test here: 1/(B1 + 1) must be at most
# alpha times the smallest weight (1/25 for HSICAgg's 5 x 5 bandwidths), which 500 allows.
B1, B2, B3 = 500, 500, 100


# --- the perturbed uniform density (MMDAgg paper, Eq. 17) -------------------------------------------

def bump(t):
    """G(t): a smooth bump on (−1, −1/2) minus one on (−1/2, 0), zero elsewhere; its integral is 0."""
    t = np.asarray(t, dtype=float)
    out = np.zeros_like(t)
    a = (t > -1) & (t < -0.5)
    b = (t >= -0.5) & (t < 0)
    ua = 4 * t[a] + 3
    ub = 4 * t[b] + 1
    out[a] = np.exp(-1 / (1 - ua ** 2))
    out[b] = -np.exp(-1 / (1 - ub ** 2))
    return out


def perturbed_uniform_density(U, theta, P, c, s=1.0):
    """f_θ(u) = 1 + c P^(−s) Σ_ν θ_ν Π_i G(P u_i − ν_i) on [0, 1]^d, ν over {1..P}^d; θ a (P,)*d array of ±1.
    Only the cell holding u contributes: ν_i = ⌈P u_i⌉."""
    n, d = U.shape
    cell = np.clip(np.ceil(P * U), 1, P).astype(int)
    prod = np.ones(n)
    for i in range(d):
        prod *= bump(P * U[:, i] - cell[:, i])
    signs = theta[tuple((cell - 1).T)]
    return 1 + c * P ** (-s) * signs * prod


def sample_perturbed_uniform(n, d, P, c, rng, s=1.0):
    """n rows of f_θ by rejection from the uniform on [0, 1]^d (f_θ ≤ 1 + c P^(−s) e^(−d)), θ drawn."""
    theta = rng.choice([-1.0, 1.0], size=(P,) * d)
    bound = 1 + c * P ** (-s) * math.exp(-d)
    rows = []
    have = 0
    while have < n:
        U = rng.uniform(size=(2 * (n - have) + 16, d))
        keep = rng.uniform(0, bound, size=U.shape[0]) <= perturbed_uniform_density(U, theta, P, c, s)
        rows.append(U[keep])
        have += int(keep.sum())
    return np.concatenate(rows)[:n]


# --- the Gaussian–Bernoulli RBM (Liu et al. 2016; KSDAgg paper, Section 4.4) -------------------------
# p(x, h) ∝ exp(xᵀBh/2 + bᵀx + cᵀh − ‖x‖²/2), h ∈ {−1, 1}^dh. Then x | h ~ N(b + Bh/2, I),
# P(h_j = 1 | x) = sigmoid(2 a_j) with a = Bᵀx/2 + c, and the score of the marginal is
# ∇ log p(x) = b − x + B tanh(a) / 2.

class Rbm:
    def __init__(self, B, b, c):
        self.B, self.b, self.c = B, b, c

    def score(self, X):
        return self.b - X + 0.5 * np.tanh(0.5 * X @ self.B + self.c) @ self.B.T

    def sample(self, n, burn_in, rng):
        """n independent blocked-Gibbs chains from h uniform, each run burn_in sweeps; their last x."""
        dh = self.B.shape[1]
        h = rng.choice([-1.0, 1.0], size=(n, dh))
        for _ in range(burn_in):
            X = self.b + 0.5 * h @ self.B.T + rng.normal(size=(n, self.B.shape[0]))
            a = 0.5 * X @ self.B + self.c
            h = np.where(rng.uniform(size=a.shape) < 1 / (1 + np.exp(-2 * a)), 1.0, -1.0)
        return self.b + 0.5 * h @ self.B.T + rng.normal(size=(n, self.B.shape[0]))


def rbm_pair(dx, dh, sigma, seed=0):
    """The model p (B with ±1 entries, b and c standard normal) and q, p's B plus σ times a fixed
    standard normal matrix (the same direction for every σ, as in the paper)."""
    rng = np.random.default_rng(seed)
    B = rng.choice([-1.0, 1.0], size=(dx, dh))
    b = rng.normal(size=dx)
    c = rng.normal(size=dh)
    E = rng.normal(size=(dx, dh))
    return Rbm(B, b, c), Rbm(B + sigma * E, b, c)


# --- the references ---------------------------------------------------------------------------------

def load_module(checkout, package, name):
    path = os.path.join(checkout, package, "np.py")
    if not os.path.isfile(path):
        sys.exit(f"error: {path} not found: give a checkout of antoninschrab/{package} (the directory holding "
                 f"{package}/np.py)")
    if package == "agginc":
        sys.modules.setdefault("psutil", types.ModuleType("psutil"))  # only used for batch_size="auto"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the experiments --------------------------------------------------------------------------------

def experiments(quick):
    """name -> settings. Full: the paper's settings where the CPU budget allows, else scaled (README)."""
    if quick:
        return {
            "mmd-1d": dict(d=1, n=100, xs=[1, 3], c=2.7, reps=4, groups=2),
            "mmd-2d": dict(d=2, n=100, xs=[1, 2], c=7.3, reps=4, groups=2),
            "hsic": dict(n=100, P=2, xs=[0.0, 14.0], reps=4, groups=2),
            "ksd-rbm": dict(n=100, dx=50, dh=40, burn_in=100, xs=[0.0, 0.06], reps=4, groups=2),
        }
    return {
        "mmd-1d": dict(d=1, n=500, xs=[1, 2, 3, 4], c=2.7, reps=48, groups=4),
        "mmd-2d": dict(d=2, n=1000, xs=[1, 2, 3], c=7.3, reps=32, groups=4),
        "hsic": dict(n=500, P=2, xs=[0.0, 6.0, 10.0, 14.0], reps=60, groups=4),
        "ksd-rbm": dict(n=500, dx=50, dh=40, burn_in=1000, xs=[0.0, 0.01, 0.02, 0.03, 0.04], reps=48, groups=4),
    }


def data_and_tests(name, cfg, refs, kef):
    """For experiment `name`: make(x, rng) -> the data of one repetition, and the two tests
    (data, seed) -> 0 or 1."""
    if name.startswith("mmd"):
        d, n, c = cfg["d"], cfg["n"], cfg["c"]

        def make(P, rng):
            return rng.uniform(size=(n, d)), sample_perturbed_uniform(n, d, int(P), c, rng)

        def ours(data, seed):
            return int(kef.mmdagg(*data, alpha=ALPHA, bootstrap_draws=B1, level_draws=B2, bisection_steps=B3,
                                  seed=seed, threads=1)["aggregate"]["reject"])

        def theirs(data, seed):
            return int(refs["mmdagg"].mmdagg(*data, alpha=ALPHA, B1=B1, B2=B2, B3=B3, seed=seed))
        return make, ours, theirs
    if name == "hsic":
        n, P = cfg["n"], cfg["P"]

        def make(c, rng):
            Z = sample_perturbed_uniform(n, 2, P, c, rng)
            return Z[:, :1].copy(), Z[:, 1:].copy()

        def ours(data, seed):
            return int(kef.hsicagg(*data, alpha=ALPHA, bootstrap_draws=B1, level_draws=B2, bisection_steps=B3,
                                   seed=seed, threads=1)["aggregate"]["reject"])

        def theirs(data, seed):
            pairs = data[0].shape[0] // 2
            return int(refs["agginc"].agginc("hsic", *data, R=pairs - 1, alpha=ALPHA, B1=B1, B2=B2, B3=B3,
                                             batch_size=None, seed=seed))
        return make, ours, theirs
    if name == "ksd-rbm":
        n, dx, dh, burn_in = cfg["n"], cfg["dx"], cfg["dh"], cfg["burn_in"]
        models = {}

        def make(sigma, rng):
            if sigma not in models:
                models[sigma] = rbm_pair(dx, dh, sigma)
            p, q = models[sigma]
            X = q.sample(n, burn_in, rng)
            return X, p.score(X)

        def ours(data, seed):
            return int(kef.ksdagg_scores(*data, alpha=ALPHA, bootstrap_draws=B1, level_draws=B2,
                                         bisection_steps=B3, seed=seed, threads=1)["aggregate"]["reject"])

        def theirs(data, seed):
            return int(refs["ksdagg"].ksdagg(*data, alpha=ALPHA, B1=B1, B2=B2, B3=B3, seed=seed))
        return make, ours, theirs
    raise ValueError(name)


def run_experiment(index, name, cfg, refs, kef):
    make, ours, theirs = data_and_tests(name, cfg, refs, kef)
    rows, seconds = [], {"data": 0.0, "kef": 0.0, "reference": 0.0}
    per_group = cfg["reps"] // cfg["groups"]
    for xi, x in enumerate(cfg["xs"]):
        counts = {"kef": [0] * cfg["groups"], "reference": [0] * cfg["groups"]}
        for rep in range(cfg["reps"]):
            # One stream per experiment, point and repetition: the data do not depend on the others.
            rng = np.random.default_rng([2024, index, xi, rep])
            t = time.process_time()
            data = make(x, rng)
            seconds["data"] += time.process_time() - t
            group = rep // per_group
            for impl, test in (("kef", ours), ("reference", theirs)):
                t = time.process_time()
                counts[impl][group] += test(data, rep)
                seconds[impl] += time.process_time() - t
        for impl in ("kef", "reference"):
            for g in range(cfg["groups"]):
                rows.append({"experiment": name, "x": x, "implementation": impl, "group": g,
                             "repetitions": per_group, "rejections": counts[impl][g]})
        k, r = sum(counts["kef"]), sum(counts["reference"])
        print(f"{name} x={x}: kef {k}/{cfg['reps']}, reference {r}/{cfg['reps']}", flush=True)
    return rows, seconds


def paired_check(spec, settings, refs, kef, out):
    """Both tests on the same `reps` data sets of one point, decision by decision (paired-<experiment>-<x>.csv):
    the data sets where exactly one test rejects, and the exact two-sided McNemar (sign) test of
    "each is as likely as the other to be the one rejecting". The data come from streams of their own,
    not the power curves' ones."""
    name, x, reps = spec.split(":")
    cfg = dict(settings[name])
    x = int(x) if name.startswith("mmd") else float(x)
    make, ours, theirs = data_and_tests(name, cfg, refs, kef)
    index = list(settings).index(name)
    rows = []
    for rep in range(int(reps)):
        data = make(x, np.random.default_rng([2025, index, rep]))
        rows.append({"repetition": rep, "kef": ours(data, rep), "reference": theirs(data, rep)})
    write_csv(os.path.join(out, f"paired-{name}-{x}.csv"), rows, ["repetition", "kef", "reference"])
    kef_only = sum(r["kef"] and not r["reference"] for r in rows)
    ref_only = sum(r["reference"] and not r["kef"] for r in rows)
    m = kef_only + ref_only
    tail = sum(math.comb(m, i) for i in range(min(kef_only, ref_only) + 1)) / 2 ** m if m else 1.0
    print(f"paired {name} x={x}, {reps} data sets: kef {sum(r['kef'] for r in rows)}, reference "
          f"{sum(r['reference'] for r in rows)}; only kef rejects {kef_only}, only the reference {ref_only}; "
          f"McNemar exact p = {min(1.0, 2 * tail):.3f}")


def agreement(rows):
    """Per experiment and x: both rates over all repetitions, their difference and its Monte Carlo sd
    (two independent binomials, sd from the pooled rate)."""
    out = []
    keys = sorted({(r["experiment"], r["x"]) for r in rows}, key=lambda k: (k[0], float(k[1])))
    for exp, x in keys:
        sel = [r for r in rows if r["experiment"] == exp and r["x"] == x]
        tot = {i: (sum(r["rejections"] for r in sel if r["implementation"] == i),
                   sum(r["repetitions"] for r in sel if r["implementation"] == i)) for i in ("kef", "reference")}
        (k, n), (rr, _) = tot["kef"], tot["reference"]
        pooled = (k + rr) / (2 * n)
        sd = math.sqrt(max(pooled * (1 - pooled), 1.0 / n) * 2 / n)
        out.append({"experiment": exp, "x": x, "repetitions": n, "kef": k / n, "reference": rr / n,
                    "difference": (k - rr) / n, "sd_difference": sd,
                    "within_2sd": int(abs(k - rr) / n <= 2 * sd)})
    return out


def curves(rows, name, impl):
    """x, mean power over groups, mean ± sd over groups (clipped to [0, 1])."""
    out = []
    for x in sorted({r["x"] for r in rows if r["experiment"] == name}, key=float):
        rates = [r["rejections"] / r["repetitions"] for r in rows
                 if r["experiment"] == name and r["x"] == x and r["implementation"] == impl]
        mean, sd = mean_sd(rates)
        out.append({"x": x, "y": mean, "lower": max(0.0, mean - sd), "upper": min(1.0, mean + sd)})
    return out


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


TITLES = {
    "mmd-1d": ("MMDAgg, perturbed uniform, d = 1", "number of perturbations P"),
    "mmd-2d": ("MMDAgg, perturbed uniform, d = 2", "number of perturbations P"),
    "hsic": ("HSICAgg, perturbed uniform pair", "perturbation amplitude c"),
    "ksd-rbm": ("KSDAgg, Gauss-Bernoulli RBM", "perturbation sd sigma of B"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mmdagg", default=os.environ.get("KEF_MMDAGG_REFERENCE", ""),
                        help="checkout of antoninschrab/mmdagg (default: $KEF_MMDAGG_REFERENCE)")
    parser.add_argument("--ksdagg", default=os.environ.get("KEF_KSDAGG_REFERENCE", ""),
                        help="checkout of antoninschrab/ksdagg (default: $KEF_KSDAGG_REFERENCE)")
    parser.add_argument("--agginc", default=os.environ.get("KEF_AGGINC_REFERENCE", ""),
                        help="checkout of antoninschrab/agginc (default: $KEF_AGGINC_REFERENCE)")
    parser.add_argument("--kef", default="build/bin/kef", help="the kef command, for the figures")
    parser.add_argument("--quick", action="store_true", help="a smoke test: tiny sizes, a few repetitions")
    parser.add_argument("--out", help="output directory (default: results/ beside this script; "
                                      "runs/aggregated-tests-quick with --quick)")
    parser.add_argument("--only", nargs="*", choices=sorted(TITLES), help="run only these experiments")
    parser.add_argument("--paired", nargs="*", metavar="EXPERIMENT:X:REPS",
                        help="instead of the curves, the paired check of one point (e.g. mmd-1d:3:120)")
    args = parser.parse_args()
    missing = [package for package, checkout in (("mmdagg", args.mmdagg), ("ksdagg", args.ksdagg),
                                                  ("agginc", args.agginc))
               if not os.path.isfile(os.path.join(checkout, package, "np.py"))]
    if args.quick and missing:
        # The smoke test a ctest runs: without the references there is nothing to compare (77: skipped).
        print(f"skipped: no checkout of {', '.join(missing)} (--{missing[0]} or KEF_{missing[0].upper()}_REFERENCE)")
        sys.exit(77)
    out = args.out or ("runs/aggregated-tests-quick" if args.quick else os.path.join(HERE, "results"))
    os.makedirs(out, exist_ok=True)
    import kef
    refs = {"mmdagg": load_module(args.mmdagg, "mmdagg", "mmdagg_reference_np"),
            "ksdagg": load_module(args.ksdagg, "ksdagg", "ksdagg_reference_np"),
            "agginc": load_module(args.agginc, "agginc", "agginc_reference_np")}
    settings = experiments(args.quick)
    if args.paired:
        for spec in args.paired:
            paired_check(spec, settings, refs, kef, out)
        return
    names = args.only or list(settings)
    rows, timings = [], []
    for index, name in enumerate(settings):
        if name not in names:
            continue
        r, sec = run_experiment(index, name, settings[name], refs, kef)
        rows += r
        timings.append({"experiment": name, **{f"{k}_cpu_seconds": v for k, v in sec.items()}})
        print(f"{name}: CPU seconds {sec}", flush=True)
        for impl in ("kef", "reference"):
            write_csv(os.path.join(out, f"{name}-{impl}.csv"), curves(r, name, impl), ["x", "y", "lower", "upper"])
        title, xlabel = TITLES[name]
        cfg = settings[name]
        foot = (f"n = {cfg['n']}; {cfg['reps']} repetitions per point; band: ± sd over {cfg['groups']} groups; "
                f"alpha = {ALPHA}")
        if args.quick:
            title += " (quick mode: not results)"
        subprocess.run([args.kef, "lineplot", "--out", os.path.join(out, f"{name}.png"), "--title", title,
                        "--x-label", xlabel, "--y-label", "rejection rate", "--footnote", foot,
                        f"kef={os.path.join(out, name + '-kef.csv')}",
                        f"reference={os.path.join(out, name + '-reference.csv')}"], check=True)
    write_csv(os.path.join(out, "rejections.csv"), rows,
              ["experiment", "x", "implementation", "group", "repetitions", "rejections"])
    agree = agreement(rows)
    write_csv(os.path.join(out, "agreement.csv"), agree, list(agree[0]))
    write_csv(os.path.join(out, "timings.csv"), timings, list(timings[0]))
    for a in agree:
        print(f"{a['experiment']:8s} x={a['x']!s:5s} kef {a['kef']:.3f} reference {a['reference']:.3f} "
              f"difference {a['difference']:+.3f} (sd {a['sd_difference']:.3f})")


if __name__ == "__main__":
    main()
