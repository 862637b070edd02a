#!/usr/bin/python3
"""Experiment 2 of Flaxman et al. (2016), "Bayesian learning of kernel embeddings": the Bayesian witness
function of two distributions with equal means and variances, for a small and a large sample, with
`kef test witness`.

    bkl_experiment2.py [--kef build/bin/kef] [--small 50] [--large 500] [--reps 10] [--hmc-reps 1] [--tau2 1] [--seed 0]
                       [--grid -3:3:121] [--out experiments/bkl/results] [--threads 2] [--quick]

P = N(0, 1) and Q = Laplace(0, 1/√2): both have mean 0 and variance 1 (the paper's pair, "a normal and
a Laplace distribution" with equal first two moments; its sample sizes were lost in the text's
extraction, so --small and --large are this script's choice). For each size, n points are drawn from
each distribution and the witness μ_P − μ_Q is computed on the grid with its central 80% credible band,
ℓ from the pooled sample:
  - `median`: the median heuristic (fixed ℓ), for comparison;
  - `mode`: ℓ fixed at BKL's posterior mode;
  - `hmc`: integrated over ℓ, the mixture over BKL's 800 HMC draws of log ℓ (τ² = --tau2, default 1, in both BKL rules and in the
    embeddings' likelihood) (4 chains x 200 draws after
    200 warm-up; the paper: 4 chains x 200 draws of NUTS, with priors on ℓ and τ² where kef fixes τ²).
Printed: for each size and rule, the fraction of the grid where the band excludes 0, as mean ± sd over
--reps data sets (seeded from --seed, the size and the repetition; `hmc` on the first --hmc-reps of them
only, since each of its 800 draws costs two O(n³) factorisations: about 40 s at n = 500 on 2 busy
cores), with ℓ. The first data set's
witnesses are drawn as figures: integrated over ℓ, OUT/witness-small.png and OUT/witness-large.png, with
the densities OUT/densities.png the three side by side in OUT/figure3.png (the paper's figure 3 (a)-(c));
the same with the median heuristic's ℓ in OUT/figure3-median.png; BKL's profile of log L in ℓ for those
data sets in OUT/profiles.png (experiments/bkl/bkl_profile_plot.py). OUT/experiment2-table.md holds the table. --quick: 2 repetitions, n = 30 and 150, a 41-point grid (the
ctest).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("failed (exit %d): %s\n%s" % (out.returncode, " ".join(cmd), out.stderr))
    return out.stdout


def samples(seed, size_tag, rep, n):
    rng = np.random.default_rng([seed, size_tag, rep])
    x = rng.standard_normal(n)
    y = rng.laplace(0.0, 1.0 / math.sqrt(2.0), n)  # variance 2b² = 1
    return x.reshape(-1, 1), y.reshape(-1, 1)


def write_csv(path, header, cols):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in zip(*cols):
            f.write(",".join("%.17g" % v for v in row) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kef", default=os.path.join(here, "..", "..", "build", "bin", "kef"))
    ap.add_argument("--small", type=int, default=50)
    ap.add_argument("--large", type=int, default=500)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hmc-reps", type=int, default=1)
    ap.add_argument("--tau2", type=float, default=1.0)
    ap.add_argument("--grid", default="-3:3:121")
    ap.add_argument("--out", default=os.path.join(here, "results"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.hmc_reps, args.small, args.large, args.grid = 2, 1, 30, 150, "-3:3:41"
    os.makedirs(args.out, exist_ok=True)
    rules = [("median", ["--kernel-bandwidth", "median"]),
             ("mode", ["--kernel-bandwidth", "bkl"]),
             ("hmc", ["--kernel-bandwidth", "bkl", "--integrate-lengthscale"])]
    sizes = [("small", 1, args.small), ("large", 2, args.large)]
    rows = []
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        x_path, y_path = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        for tag, size_tag, n in sizes:
            for rule, flags in rules:
                fractions, ells, secs = [], [], []
                for rep in range(args.reps):
                    if rule == "hmc" and rep >= args.hmc_reps:
                        break
                    x, y = samples(args.seed, size_tag, rep, n)
                    np.save(x_path, x)
                    np.save(y_path, y)
                    cmd = [args.kef, "test", "witness", x_path, y_path, "--grid=" + args.grid, "--json",
                           "--seed", str(rep), "--threads", str(args.threads), "--tau2", repr(args.tau2)] + flags
                    if rep == 0:
                        cmd += ["--out", os.path.join(args.out, "witness-%s-%s.csv" % (tag, rule))]
                        if rule != "mode":
                            cmd += ["--plot", os.path.join(args.out, "witness-%s%s.png"
                                                           % (tag, "" if rule == "hmc" else "-median"))]
                    t0 = time.time()
                    text = run(cmd)
                    j = json.loads(text)
                    if rep == 0 and rule == "hmc":
                        # The BKL profile of the figure's data set, drawn by bkl_profile_plot.py.
                        with open(os.path.join(args.out, "witness-%s-hmc.json" % tag), "w") as f:
                            f.write(text)
                        run(["/usr/bin/python3", os.path.join(here, "bkl_profile_plot.py"),
                             os.path.join(args.out, "witness-%s-hmc.json" % tag), "--kef", args.kef,
                             "--out", os.path.join(args.out, "profile-%s.png" % tag)])
                    secs.append(time.time() - t0)
                    fractions.append(j["band_excludes_zero"])
                    ells.append(j["bandwidth"]["sigma"])
                f, l = np.array(fractions), np.array(ells)
                sd = lambda a: a.std(ddof=1) if a.size > 1 else 0.0
                rows.append((tag, n, rule, f.size, f.mean(), sd(f), l.mean(), sd(l), np.mean(secs)))
                print("%-5s n = %4d  %-4s  band excludes 0 on %.3f ± %.3f of the grid (ℓ = %.3f ± %.3f; %d data sets, "
                      "%.1f s each)" % (tag, n, rule, f.mean(), sd(f), l.mean(), sd(l), f.size, np.mean(secs)),
                      flush=True)
    # The densities (the paper's panel (a)), drawn with kef lineplot.
    a, b_, _ = (float(v) for v in args.grid.split(":"))
    xs = np.linspace(a, b_, 401)
    normal = np.exp(-xs ** 2 / 2) / math.sqrt(2 * math.pi)
    b = 1 / math.sqrt(2)
    laplace = np.exp(-np.abs(xs) / b) / (2 * b)
    write_csv(os.path.join(args.out, "density-normal.csv"), ["x", "y"], [xs, normal])
    write_csv(os.path.join(args.out, "density-laplace.csv"), ["x", "y"], [xs, laplace])
    run([args.kef, "lineplot", "N(0, 1)=" + os.path.join(args.out, "density-normal.csv"),
         "Laplace(0, 1/√2)=" + os.path.join(args.out, "density-laplace.csv"),
         "--out", os.path.join(args.out, "densities.png"), "--title", "P and Q: equal mean and variance",
         "--x-label", "x", "--y-label", "density"])
    for fig, suffix in [("figure3.png", ""), ("figure3-median.png", "-median")]:
        run([args.kef, "montage", "--columns", "3", "--out", os.path.join(args.out, fig),
             os.path.join(args.out, "densities.png"), os.path.join(args.out, "witness-small%s.png" % suffix),
             os.path.join(args.out, "witness-large%s.png" % suffix)])
    run([args.kef, "montage", "--columns", "2", "--out", os.path.join(args.out, "profiles.png"),
         os.path.join(args.out, "profile-small.png"), os.path.join(args.out, "profile-large.png")])
    with open(os.path.join(args.out, "experiment2-table.md"), "w") as t:
        t.write("Bayesian witness of N(0, 1) against Laplace(0, 1/√2), grid %s, central 80%% band, "
                "τ² = %g (experiments/bkl/bkl_experiment2.py, seed %d)\n\n" % (args.grid, args.tau2, args.seed))
        t.write("| sample | n per distribution | ℓ rule | data sets | band excludes 0 (fraction of grid) | ℓ | s per run |\n")
        t.write("|---|---|---|---|---|---|---|\n")
        for tag, n, rule, k, fm, fs, lm, ls, s in rows:
            rule_text = {"median": "median heuristic", "mode": "BKL mode", "hmc": "BKL, integrated (HMC)"}[rule]
            pm = lambda m, d: "%.3f ± %.3f" % (m, d) if k > 1 else "%.3f" % m
            t.write("| %s | %d | %s | %d | %s | %s | %.1f |\n" % (tag, n, rule_text, k, pm(fm, fs), pm(lm, ls), s))
    print("table: %s; figures: %s (%.0f s in all)" % (os.path.join(args.out, "experiment2-table.md"),
                                                      os.path.join(args.out, "figure3.png"), time.time() - started))


if __name__ == "__main__":
    main()
