"""Experiment 1 of Flaxman et al. (2016), "Bayesian learning of kernel embeddings", with `kef test two-sample`:
type II error of the MMD two-sample test at α = 0.05 against the covariance skew ε.

    bkl_experiment1.py [--kef build/bin/kef] [--reps 50] [--permutations 200] [--spacing 10]
                                [--eps 0.5,1,2,4,6,8,10,12,15] [--seed 0] [--bandwidth median]

P: an equal mixture of bivariate Gaussians centred on a 3 x 3 grid (spacing --spacing; the paper does not
state it, 10 is the usual "blobs" choice), identity covariance. Q: the same centres, covariance
[[1, c], [c, 1]] with c = (ε − 1)/(ε + 1), whose eigenvalues 1 ± c have ratio ε, its axes rotated by 45°.
100 points per component: 900 from P against 900 from Q, as in the paper. ε = 1 makes Q = P. With the
paper's design (exactly 100 points from each component) X and Y are stratified, not i.i.d. draws of the
mixture, so the permutation null is wider than the observed statistic's: the test is conservative
(rejection rate below 0.05 at ε = 1). With --iid each point's component is drawn at random and the
rejection rate at ε = 1 is the test's size, 0.05 up to Monte Carlo error. For each ε, --reps data sets (seeded from
--seed, ε and the repetition), each tested with --permutations permutations (p-value by permutation and by
the Gamma approximation); printed: the rejection rate at α = 0.05 with its Monte Carlo standard error
√(r(1 − r)/reps), and the type II error 1 − rate for ε ≠ 1. --bandwidth bkl chooses σ by Bayesian kernel
learning on the pooled sample (kef test's rule), the paper's comparison. BKL refuses a data set whose
pseudolikelihood maximiser sits on a bound of its prior box (kef test exits 2 saying so): such a run has no
bandwidth and no test, so it is counted as a failure to reject (a type II error when ε ≠ 1) and reported in the
`refused` column. --csv DIR writes DIR/<bandwidth>_perm.csv and DIR/<bandwidth>_gamma.csv (x = ε, y = type II
error, lower/upper = ± 2 standard errors clipped to [0, 1]) for `kef lineplot`.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def blobs(rng, per_component, spacing, eps, iid):
    centres = np.array([(i * spacing, j * spacing) for i in range(3) for j in range(3)], dtype=float)
    c = (eps - 1.0) / (eps + 1.0)
    cov = np.array([[1.0, c], [c, 1.0]])
    chol = np.linalg.cholesky(cov)
    pts = rng.standard_normal((9 * per_component, 2)) @ chol.T
    # The paper's design: exactly per_component points from each component. iid: each point's component
    # drawn at random, so that X and Y are i.i.d. samples of the mixture (exchangeable under H0).
    labels = rng.integers(0, 9, 9 * per_component) if iid else np.repeat(np.arange(9), per_component)
    return pts + centres[labels]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kef", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "kef"))
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--permutations", type=int, default=200)
    ap.add_argument("--spacing", type=float, default=10.0)
    ap.add_argument("--eps", default="0.5,1,2,4,6,8,10,12,15")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bandwidth", default="median")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--csv", help="directory for the type II error curves (CSV x,y,lower,upper)")
    ap.add_argument("--iid", action="store_true",
                    help="draw each point's component at random instead of exactly 100 per component")
    args = ap.parse_args()
    alpha = 0.05
    print("eps  reject_perm  se     reject_gamma  se     type2_perm  type2_gamma  mean_sigma  refused")
    curves = {"perm": [], "gamma": []}
    with tempfile.TemporaryDirectory() as tmp:
        x_path, y_path = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        for eps in [float(e) for e in args.eps.split(",")]:
            rej_perm = rej_gamma = 0
            sigmas = []
            refused = 0
            for r in range(args.reps):
                rng = np.random.default_rng([args.seed, int(round(eps * 1000)), r])
                np.save(x_path, blobs(rng, 100, args.spacing, 1.0, args.iid))
                np.save(y_path, blobs(rng, 100, args.spacing, eps, args.iid))
                out = subprocess.run(
                    [args.kef, "test", "two-sample", x_path, y_path, "--json", "--kernel-bandwidth", args.bandwidth,
                     "--permutations", str(args.permutations), "--seed", str(r), "--threads", str(args.threads)],
                    capture_output=True, text=True)
                if out.returncode == 2 and args.bandwidth == "bkl" and "bound" in out.stderr:
                    refused += 1  # no bandwidth, no test: counted as not rejecting
                    continue
                if out.returncode != 0:
                    sys.exit("kef test failed: " + out.stderr)
                j = json.loads(out.stdout)
                rej_perm += j["p_value"]["permutation"] <= alpha
                rej_gamma += j["p_value"]["gamma"] <= alpha
                sigmas.append(j["bandwidth"]["sigma"])
            n = args.reps
            rp, rg = rej_perm / n, rej_gamma / n
            se = lambda p: math.sqrt(p * (1 - p) / n)
            t2p = "-" if eps == 1.0 else "%.3f" % (1 - rp)
            t2g = "-" if eps == 1.0 else "%.3f" % (1 - rg)
            mean_sigma = np.mean(sigmas) if sigmas else float("nan")
            print("%-4g %-12.3f %-6.3f %-13.3f %-6.3f %-11s %-12s %-11.3f %d" % (eps, rp, se(rp), rg, se(rg), t2p, t2g,
                                                                                mean_sigma, refused), flush=True)
            if eps != 1.0:
                curves["perm"].append((eps, 1 - rp, se(rp)))
                curves["gamma"].append((eps, 1 - rg, se(rg)))
        if args.csv:
            os.makedirs(args.csv, exist_ok=True)
            for kind, rows in curves.items():
                with open(os.path.join(args.csv, "%s_%s.csv" % (args.bandwidth, kind)), "w") as f:
                    f.write("x,y,lower,upper\n")
                    for eps, t2, s in rows:
                        f.write("%g,%.6f,%.6f,%.6f\n" % (eps, t2, max(0.0, t2 - 2 * s), min(1.0, t2 + 2 * s)))


if __name__ == "__main__":
    main()
