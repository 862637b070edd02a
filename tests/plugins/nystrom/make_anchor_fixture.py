#!/usr/bin/env python3
"""Regenerates tests/plugins/nystrom/fixtures/ from the NumPy anchor nystrom_numpy.py.

    /usr/bin/python3 tests/plugins/nystrom/make_anchor_fixture.py ANCHOR.py

ANCHOR.py is the NumPy anchor program (kept beside the repository, not part of it).

Data: train (120 x 3) and test (40 x 3) rows from numpy.random.default_rng(20261124), a two-cluster
shape so the score is not linear; basis rows idx (the first 15 of a seeded permutation). Settings:
Gaussian kernel sigma 1.3, lambda 1e-3, q0 = N(0, 2^2 I). Written: train.npy, test.npy, points.npy
(train[idx]), and for each fit (nystrom orders 1, nystrom orders 1,2, full) the anchor's score,
Laplacian and f at the test rows: {name}_score.npy, {name}_laplacian.npy, {name}_f.npy.
The anchor's Cholesky needed no jitter for these fits (printed below), so kef's ridge-free Cholesky
solves the same system.
"""
import importlib.util
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
if len(sys.argv) != 2:
    sys.exit(__doc__)
anchor = sys.argv[1]
spec = importlib.util.spec_from_file_location("nystrom_numpy", anchor)
ny = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ny)

rng = np.random.default_rng(20261124)
n, D, m = 120, 3, 15
centres = rng.choice([-1.0, 1.0], size=(n + 40, 1)) * np.array([1.2, 0.0, 0.5])
rows = rng.normal(size=(n + 40, D)) * np.array([0.8, 1.0, 0.6]) + centres
X, T = rows[:n], rows[n:]
idx = rng.permutation(n)[:m]
sigma, lam, std, chunk = 1.3, 1e-3, 2.0, 4e6
out = os.path.join(here, "fixtures")
os.makedirs(out, exist_ok=True)
np.save(os.path.join(out, "train.npy"), X)
np.save(os.path.join(out, "test.npy"), T)
np.save(os.path.join(out, "points.npy"), X[idx])
fits = {
    "orders1": ny.fit_nystrom(X, X[idx], [1], sigma, lam, std, chunk),
    "orders12": ny.fit_nystrom(X, X[idx], [1, 2], sigma, lam, std, chunk),
}
for name, (model, jitter, _) in fits.items():
    print(f"{name} jitter {jitter:.3e}")
fits = {k: v[0] for k, v in fits.items()}
fits["full"] = ny.fit_full(X, sigma, lam, std, chunk)
for name, model in fits.items():
    g, lap, f = ny.evaluate(model, T, sigma, std, chunk, value=True)
    np.save(os.path.join(out, f"{name}_score.npy"), g)
    np.save(os.path.join(out, f"{name}_laplacian.npy"), lap)
    np.save(os.path.join(out, f"{name}_f.npy"), f)
    print(f"{name} score norm {np.linalg.norm(g):.6f}")
