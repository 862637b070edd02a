#!/usr/bin/python3
"""Where a DDE fit on two moons or rings differs from the truth (experiments/dde-table1/README.md).

    experiments/dde-table1/diagnose-dde-table1.py SEED_DIR [--set two_moons|rings] [--grid N]

SEED_DIR is one seed's directory of experiments/dde-table1/reproduce-dde-table1.sh: it holds dde/ (the kef run, with
models/dde and data/{train,test}.npy, or, for runs made before the runs saved their splits, the
data-only run dde.splits/data/) and dde.samples.npy (the sampler's timed draws); --set defaults to the
directory's parent's name. Both truths are known: two moons is exp(-U) of Rezende and Mohamed (2015)
(up to its normaliser), rings is kef's synthetic/rings (radius ~ sum_k w_k N(r_k, 0.1^2), w_k
proportional to r_k = 1, 3, 5, a uniform angle). The model's log p~ = lambda f + log p0 and the truth
are both normalised on an N x N grid over the training box; the script prints KL and TV between them,
the MMD^2_u (x 1e-3) of Table 1's metric (the kernel of the model's f at f_bd = 0.1) for exact draws of the
grid-normalised model, of the truth and of the sampler against the test rows, and where the model is
too high or too low (by radius; for two moons also along the circle r = 2).
Needs the kef Python package (build/python of this repository, or installed) and NumPy.
"""
import argparse
import os
import sys
import tomllib

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def two_moons_energy(z):
    r = np.linalg.norm(z, axis=1)
    return 0.5 * ((r - 2) / 0.4) ** 2 - np.logaddexp(-0.5 * ((z[:, 0] - 2) / 0.6) ** 2,
                                                     -0.5 * ((z[:, 0] + 2) / 0.6) ** 2)


RINGS_RADII, RINGS_NOISE = np.array([1.0, 3.0, 5.0]), 0.1


def rings_log_density(z):
    # The folded radius mixture over the circle's length 2 pi rho (plugins/synthetic/mixtures.cpp).
    rho = np.maximum(np.linalg.norm(z, axis=1), 1e-9)  # the 1/rho at 0 is integrable; a grid point there is not
    w = RINGS_RADII / RINGS_RADII.sum()
    terms = [np.log(w[k]) - 0.5 * ((rho - c * RINGS_RADII[k]) / RINGS_NOISE) ** 2
             for k in range(len(w)) for c in (1.0, -1.0)]
    return (np.logaddexp.reduce(np.array(terms), axis=0) - np.log(RINGS_NOISE * np.sqrt(2 * np.pi))
            - np.log(2 * np.pi * rho))


SETS = {
    "two_moons": (lambda z: -two_moons_energy(z),
                  [(0, 1), (1, 1.5), (1.5, 1.8), (1.8, 2.2), (2.2, 2.5), (2.5, 3), (3, np.inf)]),
    "rings": (rings_log_density,
              [(0, 0.7), (0.7, 1.3), (1.3, 2.0), (2.0, 2.7), (2.7, 3.3), (3.3, 4.0), (4.0, 4.7), (4.7, 5.3),
               (5.3, np.inf)]),
}


def kernel_times(a, b, gamma, w, block=2000):
    """sum_j w_j exp(-gamma |a_i - b_j|^2) for each row a_i, in blocks of rows (never the whole matrix)."""
    out = np.empty(len(a))
    for i in range(0, len(a), block):
        p = a[i:i + block]
        d2 = (p * p).sum(1)[:, None] + (b * b).sum(1)[None] - 2 * p @ b.T
        out[i:i + block] = np.exp(-gamma * np.maximum(d2, 0.0)) @ w
    return out


def kernel_sum(a, b, gamma):
    return kernel_times(a, b, gamma, np.ones(len(b))).sum()


def mmd2_unbiased(a, b, gamma):
    # The diagonals are exp(0) = 1: subtract them from the within-sample sums.
    n, m = len(a), len(b)
    return ((kernel_sum(a, a, gamma) - n) / (n * (n - 1)) + (kernel_sum(b, b, gamma) - m) / (m * (m - 1))
            - 2 * kernel_sum(a, b, gamma) / (n * m))


def grid_over(lo, hi, n):
    """An n x n grid over the box [lo, hi], its points as rows and the area of one cell."""
    gx, gy = np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n)
    xx, yy = np.meshgrid(gx, gy, indexing="ij")
    return np.c_[xx.ravel(), yy.ravel()], (gx[1] - gx[0], gy[1] - gy[0])


def normalised(logp, cell_area):
    """The density on the grid and its log-normaliser log sum exp(logp) * cell, shifted by the maximum."""
    p = np.exp(logp - logp.max())
    log_c = logp.max() + np.log(p.sum() * cell_area)
    return p / (p.sum() * cell_area), log_c


TINY = 1e-300  # keeps log() finite where a grid density underflows to 0


def divergences(pt, pm, cell_area):
    """KL(truth || model), KL(model || truth) and TV of two densities normalised on one grid."""
    kl_tm = np.sum(pt * (np.log(pt + TINY) - np.log(pm + TINY))) * cell_area
    kl_mt = np.sum(pm * (np.log(pm + TINY) - np.log(pt + TINY))) * cell_area
    return kl_tm, kl_mt, 0.5 * np.sum(np.abs(pm - pt)) * cell_area


def grid_draws(grid, steps, p, k, rng):
    """k exact draws of the piecewise-constant density p on the grid (a cell, then uniform inside it)."""
    idx = rng.choice(p.size, size=k, p=p / p.sum())
    return grid[idx] + (rng.random((k, 2)) - 0.5) * np.asarray(steps)


def main():
    sys.path.insert(0, os.path.join(here, "..", "..", "build", "python"))
    import kef  # only main needs it: experiments/dde-table1/evaluate-reference-dde.py imports this file's functions

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("seed_dir")
    ap.add_argument("--set", choices=sorted(SETS))
    ap.add_argument("--grid", type=int, default=400)
    args = ap.parse_args()
    run = args.seed_dir
    name = args.set or os.path.basename(os.path.dirname(os.path.abspath(run)))
    if name not in SETS:
        print(f"diagnose-dde-table1: {run}: its parent directory is not two_moons or rings; give --set",
              file=sys.stderr)
        sys.exit(2)
    true_log_density, bands = SETS[name]
    splits = "dde/data" if os.path.exists(os.path.join(run, "dde/data/test.npy")) else "dde.splits/data"
    for f in ("dde/models/dde/model.toml", f"{splits}/train.npy", f"{splits}/test.npy", "dde.samples.npy"):
        if not os.path.exists(os.path.join(run, f)):
            print(f"diagnose-dde-table1: {os.path.join(run, f)}: no such file (a seed directory of "
                  "reproduce-dde-table1.sh is needed)", file=sys.stderr)
            sys.exit(2)
    model = kef.load(os.path.join(run, "dde/models/dde"), quiet=True)
    with open(os.path.join(run, "dde/models/dde/model.toml"), "rb") as fh:
        gamma = tomllib.load(fh)["gamma"]
    # A fit with another bandwidth factor (reproduce-dde-table1.sh --f-bd) is measured with the
    # reference's kernel, f_bd = 0.1: gamma = 0.5 / (f_bd m^2) with the same m.
    f_bd_file = os.path.join(run, "dde.f_bd")
    if os.path.exists(f_bd_file):
        with open(f_bd_file) as fh:
            gamma *= float(fh.read()) / 0.1
    train = np.load(os.path.join(run, f"{splits}/train.npy"))
    test = np.load(os.path.join(run, f"{splits}/test.npy"))
    draws = np.load(os.path.join(run, "dde.samples.npy"))

    n = args.grid
    lo, hi = train.min(0), train.max(0)
    grid, steps = grid_over(lo, hi, n)
    cell = steps[0] * steps[1]
    pm, log_cm = normalised(np.asarray(model.log_density(grid)).ravel(), cell)
    pt, log_ct = normalised(true_log_density(grid), cell)
    kl_tm, kl_mt, tv = divergences(pt, pm, cell)
    print(f"model vs truth, both normalised on the {n} x {n} grid over the training box: "
          f"KL(truth || model) {kl_tm:.4f}, KL(model || truth) {kl_mt:.4f}, TV {tv:.4f}")

    rng = np.random.default_rng(0)
    k = min(5000, len(draws))
    exact_model, exact_truth = grid_draws(grid, steps, pm, k, rng), grid_draws(grid, steps, pt, k, rng)
    print(f"MMD2_u x 1e3 against the {len(test)} test rows (gamma {gamma:.4g}, {k} draws each): "
          f"sampler {1e3 * mmd2_unbiased(draws[:k], test, gamma):.3f}, "
          f"exact model {1e3 * mmd2_unbiased(exact_model, test, gamma):.3f}, "
          f"exact truth {1e3 * mmd2_unbiased(exact_truth, test, gamma):.3f}; "
          f"sampler against exact model {1e3 * mmd2_unbiased(draws[:k], exact_model, gamma):.3f}")

    d = np.log(pm + TINY) - np.log(pt + TINY)
    r = np.linalg.norm(grid, axis=1)
    print("radius band: truth mass, model mass, truth-weighted mean log(model / truth)")
    for a, b in bands:
        s = (r >= a) & (r < b)
        w = pt[s].sum()
        print(f"  [{a}, {b}): {w * cell:.4f} {pm[s].sum() * cell:.4f} {np.sum(pt[s] * d[s]) / max(w, TINY):+.3f}")
    if name != "two_moons":
        return
    print("along r = 2 (angle: log model - log truth, both normalised)")
    for t in np.linspace(-np.pi, np.pi, 13):
        z = np.array([[2 * np.cos(t), 2 * np.sin(t)]])
        if np.all(z >= lo) and np.all(z <= hi):
            diff = (np.asarray(model.log_density(z)).ravel()[0] - log_cm) - (-two_moons_energy(z)[0] - log_ct)
            print(f"  {t:+.2f}: {diff:+.3f}")


if __name__ == "__main__":
    main()
