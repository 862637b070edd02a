#!/usr/bin/env python3
"""Writes the fixtures of dde_twin_test: one DDE iteration of the anchor dde_torch.py on exchanged draws.

Usage: make_twin_fixture.py ANCHOR_DIR OUT_DIR   (ANCHOR_DIR holds dde_torch.py; run with /usr/bin/python3)

The anchor is imported unchanged; this driver only replaces its two random sources (DDE.sample and
DDE.uniform) by draws it saves, so that kef can consume the same ones, and records the parameters before
and after one `DDE.iteration`. Differences it sets on purpose, each mirrored by the C++ test:
- gamma: kef's median heuristic (median of the distances over distinct pairs, the average of the two middle
  values, squared) instead of the anchor's lower median of squared distances; the value is saved.
- eta > 0 (case `lambda_eta`): the anchor has no RKHS penalty; a gradient hook on alpha adds eta K alpha,
  the gradient of (eta/2) alpha' K alpha, before clipping.
- kef's lambda divides the dual term; the anchor's multiplies it, so kef lambda = 2 is the anchor's 0.5.
Networks are small (z = 16, width 32) to keep the fixture small; depths, B = 100 and lr are the defaults.
Parameter vectors are in kef's layout: per linear layer W (out x in, column-major), then b.
"""
import argparse
import importlib.util
import os
import sys

import numpy as np
import torch

N, B, Z, H = 200, 100, 16, 32


def flat(net):
    out = []
    for m in net:
        if isinstance(m, torch.nn.Linear):
            out.append(m.weight.detach().numpy().flatten(order='F'))
            out.append(m.bias.detach().numpy())
    return np.concatenate(out)


def kef_gamma(X, f_bd):
    d = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    iu = np.triu_indices(len(X), 1)
    return 0.5 / (f_bd * np.median(d[iu]) ** 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('anchor_dir')
    ap.add_argument('out')
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location('dde_torch', os.path.join(a.anchor_dir, 'dde_torch.py'))
    anchor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(anchor)
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(20261124)
    X = anchor.two_moons(N, rng)
    batch = X[rng.permutation(N)[:B]]
    iters, rounds = 3, 5
    xi = rng.standard_normal(((1 + rounds * (iters + 1)) * B, Z))
    u = rng.uniform(size=(rounds * iters * B, 2))
    np.save(os.path.join(a.out, 'X.npy'), X)
    np.save(os.path.join(a.out, 'batch.npy'), batch)
    np.save(os.path.join(a.out, 'xi.npy'), xi)
    np.save(os.path.join(a.out, 'u.npy'), u)
    gamma = kef_gamma(X, 0.1)
    np.save(os.path.join(a.out, 'gamma.npy'), np.array([gamma]))
    # `paper` clips every update at a norm small enough for the clip to act on all three (at 5 the
    # sampler's gradient of this small case is not clipped, so `code` and `paper` would coincide).
    cases = {'code': dict(lam=1.0, clip=5.0, clip_generator=False, eta=0.0),
             'paper': dict(lam=1.0, clip=0.01, clip_generator=True, eta=0.0),
             'lambda_eta': dict(lam=0.5, clip=5.0, clip_generator=True, eta=0.01)}
    init = None
    for name, c in cases.items():
        args = argparse.Namespace(h=H, z=Z, gen_depth=4, f_depth=3, iter_g=rounds, v_iter=iters, lam=c['lam'],
                                  lr=1e-4, f_bd=0.1, clip=c['clip'], clip_generator=c['clip_generator'])
        torch.manual_seed(7)
        Xt = torch.tensor(X)
        model = anchor.DDE(Xt, args)
        model.f.gamma = gamma
        state = {'xi': 0, 'u': 0}

        def sample(n, model=model, state=state):
            k = state['xi']
            state['xi'] += n
            return model.gen(torch.tensor(xi[k:k + n]))

        def uniform(n, model=model, state=state):
            k = state['u']
            state['u'] += n
            return model.lo + (model.hi - model.lo) * torch.tensor(u[k:k + n])

        model.sample, model.uniform = sample, uniform
        if c['eta'] > 0:
            K = torch.exp(-gamma * anchor.sqdist(Xt, Xt))
            alpha = model.f.alpha
            alpha.register_hook(lambda g, K=K, alpha=alpha, eta=c['eta']: g + eta * K @ alpha.detach())
        before = (model.f.alpha.detach().numpy()[:, 0].copy(), flat(model.gen), flat(model.nu))
        if init is None:
            init = before
            np.save(os.path.join(a.out, 'alpha0.npy'), before[0])
            np.save(os.path.join(a.out, 'generator0.npy'), before[1])
            np.save(os.path.join(a.out, 'dual0.npy'), before[2])
        else:  # the same seed gives the same initial parameters in every case
            assert all(np.array_equal(p, q) for p, q in zip(before, init))
        lf, lg = model.iteration(torch.tensor(batch))
        assert state['xi'] == len(xi) and state['u'] == len(u)
        np.save(os.path.join(a.out, name + '_alpha1.npy'), model.f.alpha.detach().numpy()[:, 0])
        np.save(os.path.join(a.out, name + '_generator1.npy'), flat(model.gen))
        np.save(os.path.join(a.out, name + '_dual1.npy'), flat(model.nu))
        np.save(os.path.join(a.out, name + '_losses.npy'), np.array([lf, lg]))
        print(name, 'f loss', lf, 'sampler loss', lg)


if __name__ == '__main__':
    sys.exit(main())
