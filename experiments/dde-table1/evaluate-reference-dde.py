#!/usr/bin/python3
"""Measure checkpoints of the DDE reference implementation as kef's Table 1 is measured (experiments/dde-table1/README.md).

    experiments/dde-table1/evaluate-reference-dde.py --train TRAIN.npy --test TEST.npy [--set two_moons|rings]
                                      --epochs E[,E...] [--grid N] RUN_DIR [RUN_DIR ...]

The reference (Hanjun-Dai/dde) is not part of kef and none of its code is here. Its training loop (run
by its two-moons script, dde/unconditional/two_moons/run_double_dual.sh, or on other rows by
experiments/dde-table1/run-reference-dde.py) saves every 100 epochs the state of its f (epoch-E.f: alpha, one weight
per training row), its generator (epoch-E.q) and its dual to its -save_dir, one RUN_DIR per seed.
TRAIN.npy holds the training rows it was given (f's basis; for two moons, the reference's
data/synthetic/two_moon_train.npy) and TEST.npy the test rows. For each run and epoch this prints
MMD^2_u x 1e-3 against the test rows with the reference's kernel (exp(-gamma |x - y|^2),
gamma = 0.5 / (f_bd m^2), f_bd = 0.1, m^2 the median positive squared distance of the training rows,
computed in float32 as the reference computes it):
- of 10^4 generator draws (kef's protocol, experiments/dde-table1/README.md) and of as many as there are test rows
  (the reference's own `-phase test`);
- of 5000 exact draws of the model f + log p0 (p0 uniform on the training box) normalised on an N x N
  grid over the box, and of 5000 exact draws of the truth on the same grid (the metric's noise);
and KL(truth || model) and TV on that grid, the numbers experiments/dde-table1/diagnose-dde-table1.py prints for kef's
fits (the truths are that script's: two moons' exp(-U), rings' radius mixture). Draws are seeded by
the epoch, so a rerun prints the same numbers.
Needs /usr/bin/python3 with NumPy and PyTorch (python3-torch: scripts/install-deps.sh --bench).
"""
import argparse
import importlib.util
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("diagnose", os.path.join(here, "diagnose-dde-table1.py"))
diagnose = importlib.util.module_from_spec(spec)
spec.loader.exec_module(diagnose)

F_BD = 0.1  # the reference's two-moons run script


def reference_gamma(train):
    # As the reference's get_gamma: |x|^2 + |y|^2 - 2 x.y in float32, clamped at 0, median of the positive ones.
    import torch
    x = torch.tensor(train, dtype=torch.float32)
    n2 = (x * x).sum(1, keepdim=True)
    d = torch.relu(n2 + n2.T - 2.0 * x @ x.T).numpy()
    d = d[np.isfinite(d) & (d > 0)]
    return 0.5 / float(np.median(d)) / F_BD


def generator_draws(state, k, seed):
    # The reference's MLPGenerator: Linear layers list_w.0 ... list_w.L-1, ReLU between them, z ~ N(0, I), float32.
    import torch
    torch.manual_seed(seed)
    layers = sorted({int(key.split(".")[1]) for key in state})
    h = torch.randn(k, state["list_w.0.weight"].shape[1])
    with torch.no_grad():
        for i in layers:
            h = h @ state[f"list_w.{i}.weight"].T + state[f"list_w.{i}.bias"]
            if i != layers[-1]:
                h = torch.relu(h)
    return h.double().numpy()


def main():
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--set", choices=sorted(diagnose.SETS), default="two_moons")
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--epochs", required=True, help="comma-separated checkpoint epochs, e.g. 2000,11000")
    ap.add_argument("--grid", type=int, default=400)
    args = ap.parse_args()
    try:
        epochs = [int(e) for e in args.epochs.split(",")]
    except ValueError:
        print(f"evaluate-reference-dde: --epochs {args.epochs}: not a comma-separated list of integers",
              file=sys.stderr)
        sys.exit(2)
    paths = [args.train, args.test]
    paths += [os.path.join(r, f"epoch-{e}.{s}") for r in args.run_dirs for e in epochs for s in "fq"]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print(f"evaluate-reference-dde: {missing[0]}: no such file", file=sys.stderr)
        sys.exit(2)
    train32 = np.load(paths[0]).astype(np.float32)  # as the reference holds its rows
    train, test = train32.astype(np.float64), np.load(paths[1]).astype(np.float64)
    gamma = reference_gamma(train32)
    lo, hi = train.min(0), train.max(0)
    grid, steps = diagnose.grid_over(lo, hi, args.grid)
    cell = steps[0] * steps[1]
    pt, _ = diagnose.normalised(diagnose.SETS[args.set][0](grid), cell)
    mmd = diagnose.mmd2_unbiased
    print(f"gamma {gamma:.6g}; {len(train)} training rows, {len(test)} test rows; MMD2_u x 1e3 against the test rows")
    k_test = len(test)
    print(f"run epoch | sampler 1e4 | sampler {k_test} | exact model 5000 | exact truth 5000 | KL(truth||model) TV")
    for run in args.run_dirs:
        for e in epochs:
            alpha = torch.load(os.path.join(run, f"epoch-{e}.f"), map_location="cpu")["alpha"].double().numpy().ravel()
            q = torch.load(os.path.join(run, f"epoch-{e}.q"), map_location="cpu")
            pm, _ = diagnose.normalised(diagnose.kernel_times(grid, train, gamma, alpha), cell)  # p0 is constant on the box
            kl_tm, _, tv = diagnose.divergences(pt, pm, cell)
            rng = np.random.default_rng(e)
            exact_model = diagnose.grid_draws(grid, steps, pm, 5000, rng)
            exact_truth = diagnose.grid_draws(grid, steps, pt, 5000, rng)
            d10k, d_test = generator_draws(q, 10000, e), generator_draws(q, k_test, e + 1)
            print(f"{os.path.basename(os.path.normpath(run))} {e} | {1e3 * mmd(d10k, test, gamma):.3f} | "
                  f"{1e3 * mmd(d_test, test, gamma):.3f} | {1e3 * mmd(exact_model, test, gamma):.3f} | "
                  f"{1e3 * mmd(exact_truth, test, gamma):.3f} | {kl_tm:.4f} {tv:.4f}", flush=True)


if __name__ == "__main__":
    main()
