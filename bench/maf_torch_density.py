#!/usr/bin/env python3
"""Throughput of log p and of the score (d log p/dx by autograd) of maf_torch.py's MAF, which prints only the
score time of its test rows: this driver imports the anchor's own Density class (nothing re-implemented) and
times it on the points bench_flows uses.

    maf_torch_density.py ANCHORS_DIR TRAIN.npy POINTS.npy [--threads 1] [--chunk 10000] [--layers 5]

The MAF is randomly initialised by the anchor (seed 1; 5 Gaussian MADEs of [100, 100] tanh, sequential degrees,
no batch norm, float64), standardised by TRAIN's moments, as bench_flows' MAF (same architecture, other weights:
the cost does not depend on the weights). Rows go through in chunks of --chunk (10^4: larger chunks would hold
gigabytes of autograd buffers). Prints logp_points_per_second and score_points_per_second, best of 3 each.
"""
import argparse
import sys
import time
import types

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('anchors')
    ap.add_argument('train')
    ap.add_argument('points')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--chunk', type=int, default=10000)
    ap.add_argument('--layers', type=int, default=5)
    a = ap.parse_args()
    sys.path.insert(0, a.anchors)
    import torch
    import maf_torch
    torch.set_num_threads(a.threads)
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(1)
    X = torch.tensor(np.load(a.train))
    P = torch.tensor(np.load(a.points))
    opts = types.SimpleNamespace(act='tanh', hiddens='100,100', layers=a.layers, mode='sequential',
                                 batch_norm=False, mog=0)
    model = maf_torch.Density(X.shape[1], opts, X.mean(0), X.std(0), np.random.default_rng(1))
    best_lp = best_score = float('inf')
    for _ in range(3):
        t = time.perf_counter()
        with torch.no_grad():
            lp = torch.cat([model.log_prob(c) for c in P.split(a.chunk)])
        best_lp = min(best_lp, time.perf_counter() - t)
        t = time.perf_counter()
        scores = []
        for c in P.split(a.chunk):
            c = c.clone().requires_grad_(True)
            scores.append(torch.autograd.grad(model.log_prob(c).sum(), c)[0])
        best_score = min(best_score, time.perf_counter() - t)
    n = len(P)
    print(f"points {n} threads {a.threads} mean_logp {lp.mean().item():.6g} mean_score {torch.cat(scores).mean().item():.6g}")
    print(f"logp_seconds {best_lp:.6f}\nlogp_points_per_second {n / best_lp:.6g}")
    print(f"score_seconds {best_score:.6f}\nscore_points_per_second {n / best_score:.6g}")


if __name__ == '__main__':
    main()
