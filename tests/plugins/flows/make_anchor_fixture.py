#!/usr/bin/env python3
"""Regenerates tests/plugins/flows/fixtures/ from the PyTorch anchor maf_torch.py.

    /usr/bin/python3 tests/plugins/flows/make_anchor_fixture.py ANCHOR.py

ANCHOR.py is the PyTorch anchor program (kept beside the repository, not part of it).

Data: 3-D rows from numpy.random.default_rng(20261124), a curved, skewed shape (x1 depends on x0^2,
x2 on x0*x1) so no conditional is Gaussian: train 200, validation 50, test 30 rows (the last 5 of the
test rows far out in the tails). For each case the anchor is run as a program, trained briefly
(--lr 1e-2 --max-epochs 5 --batch 50 --seed 3, so the weights are not the initial ones), with
--save-weights and --score-out; then its module is imported, the saved weights loaded into its
Density, and log p, the score and the diagonal of the Hessian of log p (autograd, the latter by a second
backward pass per coordinate) computed at the test rows in float64.
Written per case into fixtures/<case>/: every saved parameter and buffer under its state-dict name
(flow.<k>.W0.npy, base.W_mu.npy, shift.npy, ...), with the mixture heads' H x D x C arrays reshaped
to H x (D*C) and D x C biases to D*C in C order (column d*C + c; kef's .npy reader takes 1-D and 2-D
arrays), and test.npy, logp.npy, score.npy, laplacian.npy, args.txt (the anchor's arguments).
Cases: made (--model made), made_mog (--model made --mog 3), maf (--layers 2), maf_mog (--layers 2
--mog 3), maf_bn (--layers 2 --batch-norm), all with --hiddens 8,8 and tanh units.
"""
import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
if len(sys.argv) != 2:
    sys.exit(__doc__)
anchor = sys.argv[1]
spec = importlib.util.spec_from_file_location("maf_torch", anchor)
mt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mt)
torch.set_default_dtype(torch.float64)

rng = np.random.default_rng(20261124)


def shape(n):
    x0 = rng.normal(size=n) * 1.5
    x1 = 0.4 * x0 ** 2 + 0.7 * rng.normal(size=n)
    x2 = 0.5 * x0 * x1 + rng.gamma(2.0, 0.5, size=n)
    return np.stack([x0, x1, x2], 1)


X, V, T = shape(200), shape(50), shape(30)
T[-5:] *= 3.0  # tails
cases = {
    "made": ["--model", "made"],
    "made_mog": ["--model", "made", "--mog", "3"],
    "maf": ["--model", "maf", "--layers", "2"],
    "maf_mog": ["--model", "maf", "--layers", "2", "--mog", "3"],
    "maf_bn": ["--model", "maf", "--layers", "2", "--batch-norm"],
}
common = ["--hiddens", "8,8", "--lr", "1e-2", "--max-epochs", "5", "--batch", "50", "--seed", "3",
          "--threads", "1"]
out_root = os.path.join(here, "fixtures")
with tempfile.TemporaryDirectory() as tmp:
    for f, A in (("train", X), ("valid", V), ("test", T)):
        np.save(os.path.join(tmp, f + ".npy"), A)
    for name, extra in cases.items():
        wdir, sfile = os.path.join(tmp, name), os.path.join(tmp, name + "_score.npy")
        args = [os.path.join(tmp, "train.npy"), "--valid", os.path.join(tmp, "valid.npy"), "--test",
                os.path.join(tmp, "test.npy"), "--save-weights", wdir, "--score-out", sfile] + extra + common
        run = subprocess.run([sys.executable, anchor] + args, capture_output=True, text=True, check=True)
        # The anchor's own model with the saved weights: log p per row and the score by autograd.
        a = argparse.Namespace(model=extra[1], mog=0, layers=5, hiddens="8,8", act="tanh", mode="sequential",
                               batch_norm=False)
        for k, v in zip(extra[::2], extra[1::2] + [None]):
            if k == "--mog":
                a.mog = int(v)
            elif k == "--layers":
                a.layers = int(v)
            elif k == "--batch-norm":
                a.batch_norm = True
        if a.model == "made":
            a.layers, a.batch_norm = (0 if a.mog else 1), False
        state = {f[:-4]: torch.tensor(np.load(os.path.join(wdir, f))) for f in os.listdir(wdir)}
        model = mt.Density(3, a, state["shift"], state["scale"], np.random.default_rng(0))
        model.load_state_dict(state)
        model.set_bn("fixed")
        Tt = torch.tensor(T).requires_grad_(True)
        lp = model.log_prob(Tt)
        g = torch.autograd.grad(lp.sum(), Tt, create_graph=True)[0]
        score = g.detach().numpy()
        # The diagonal of the Hessian of log p, one more backward pass per coordinate.
        laplacian = np.stack([torch.autograd.grad(g[:, d].sum(), Tt, retain_graph=True)[0][:, d].numpy()
                              for d in range(3)], 1)
        cli_score = np.load(sfile)
        assert np.allclose(score, cli_score, rtol=1e-12, atol=0), "the anchor's --score-out differs"
        dest = os.path.join(out_root, name)
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for key, val in state.items():
            arr = val.numpy()
            if arr.ndim == 3:
                arr = arr.reshape(arr.shape[0], -1)
            elif arr.ndim == 2 and key.startswith("base.b_"):
                arr = arr.reshape(-1)
            np.save(os.path.join(dest, key + ".npy"), np.ascontiguousarray(arr))
        np.save(os.path.join(dest, "test.npy"), T)
        np.save(os.path.join(dest, "logp.npy"), lp.detach().numpy())
        np.save(os.path.join(dest, "score.npy"), score)
        np.save(os.path.join(dest, "laplacian.npy"), laplacian)
        with open(os.path.join(dest, "args.txt"), "w") as f:
            f.write(" ".join(extra + common) + "\n")
        best = [line for line in run.stdout.splitlines() if line.startswith("best_epoch")]
        print(f"{name}: {len(state)} arrays, {best[0] if best else ''}, mean log p {lp.mean().item():.6f}")
