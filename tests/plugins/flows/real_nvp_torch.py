#!/usr/bin/env python3
"""PyTorch twin of kef's real_nvp (plugins/flows): the affine coupling layers of Dinh et al. 2017 as the
MAF paper's code configures them, written for kef's tests (maf_torch.py has no Real NVP).

Coupling layer k, mask m_j = (j + k) mod 2 (1: passed through and conditioned on):
    s = S(m*v), t = T(m*v)   (MLPs D -> hiddens -> D; tanh hidden units in S, relu in T, linear outputs)
    u = m*v + (1 - m) * exp(-s) * (v - t),   log |du/dv| = -sum_j (1 - m_j) s_j,
each followed by a batch norm in the reference's form (y = exp(log_gamma) (x - m)/sqrt(v) + beta, v with
1e-5 included, the training set's statistics); the data standardised by the training mean and sd
(part of the density); base N(0, I).

    /usr/bin/python3 tests/plugins/flows/real_nvp_torch.py [OUT_DIR]

writes OUT_DIR (default tests/plugins/flows/fixtures/real_nvp): D = 3, hiddens [8, 8], 3 coupling layers, the
same train and test rows as make_anchor_fixture.py's shape, random parameters (weights
N(0, 1/(fan_in + 1)), biases and batch-norm parameters 0.3 N(0, 1), so no term is trivially zero) and
batch-norm statistics recorded on the training rows; every parameter as .npy (layer<k>.s.W<l> as
in x out, applied h @ W, layer<k>.s.b<l>, the same for .t., bn<k>.log_gamma/.beta/.m/.v, shift, scale),
and test.npy, logp.npy, score.npy (autograd), laplacian.npy (a second backward pass per coordinate).
"""
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


class MLP(torch.nn.Module):
    def __init__(self, D, hiddens, act, gen):
        super().__init__()
        self.act = act
        sizes = [D] + hiddens + [D]
        self.W = torch.nn.ParameterList()
        self.b = torch.nn.ParameterList()
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.W.append(torch.nn.Parameter(torch.randn(a, b, generator=gen) / math.sqrt(a + 1)))
            self.b.append(torch.nn.Parameter(0.3 * torch.randn(b, generator=gen)))

    def forward(self, h):
        for k, (W, b) in enumerate(zip(self.W, self.b)):
            h = h @ W + b
            if k < len(self.W) - 1:
                h = self.act(h)
        return h


class RealNVP(torch.nn.Module):
    def __init__(self, D, hiddens, layers, shift, scale, gen):
        super().__init__()
        self.shift, self.scale = shift, scale
        self.masks = [torch.tensor([float((j + k) % 2) for j in range(D)]) for k in range(layers)]
        self.s = torch.nn.ModuleList([MLP(D, hiddens, torch.tanh, gen) for _ in range(layers)])
        self.t = torch.nn.ModuleList([MLP(D, hiddens, torch.relu, gen) for _ in range(layers)])
        self.log_gamma = [0.3 * torch.randn(D, generator=gen) for _ in range(layers)]
        self.beta = [0.3 * torch.randn(D, generator=gen) for _ in range(layers)]
        self.m = [torch.zeros(D) for _ in range(layers)]
        self.v = [torch.ones(D) for _ in range(layers)]

    def log_prob(self, x, record=False):
        u = (x - self.shift) / self.scale
        logdet = -torch.log(self.scale).sum().expand(len(x))
        for k, mask in enumerate(self.masks):
            mv = mask * u
            s, t = self.s[k](mv), self.t[k](mv)
            u = mv + (1 - mask) * torch.exp(-s) * (u - t)
            logdet = logdet - ((1 - mask) * s).sum(1)
            if record:
                self.m[k] = u.mean(0).detach()
                self.v[k] = ((u * u).mean(0) - self.m[k] ** 2 + 1e-5).detach()
            u = torch.exp(self.log_gamma[k]) * (u - self.m[k]) / torch.sqrt(self.v[k]) + self.beta[k]
            logdet = logdet + (self.log_gamma[k] - 0.5 * torch.log(self.v[k])).sum()
        return -0.5 * (u * u).sum(1) - 0.5 * u.shape[1] * math.log(2 * math.pi) + logdet


def shape(rng, n):
    x0 = rng.normal(size=n) * 1.5
    x1 = 0.4 * x0 ** 2 + 0.7 * rng.normal(size=n)
    x2 = 0.5 * x0 * x1 + rng.gamma(2.0, 0.5, size=n)
    return np.stack([x0, x1, x2], 1)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fixtures", "real_nvp")
    rng = np.random.default_rng(20261124)
    X, _, T = shape(rng, 200), shape(rng, 50), shape(rng, 30)
    T[-5:] *= 3.0
    Xt = torch.tensor(X)
    gen = torch.Generator().manual_seed(7)
    model = RealNVP(3, [8, 8], 3, Xt.mean(0), Xt.std(0), gen)
    with torch.no_grad():
        model.log_prob(Xt, record=True)
    Tt = torch.tensor(T).requires_grad_(True)
    lp = model.log_prob(Tt)
    g = torch.autograd.grad(lp.sum(), Tt, create_graph=True)[0]
    lap = np.stack([torch.autograd.grad(g[:, d].sum(), Tt, retain_graph=True)[0][:, d].numpy() for d in range(3)], 1)
    os.makedirs(out, exist_ok=True)
    arrays = {"shift": model.shift, "scale": model.scale, "test": torch.tensor(T), "logp": lp.detach(),
              "score": g.detach(), "laplacian": torch.tensor(lap)}
    for k in range(len(model.masks)):
        for name, net in (("s", model.s[k]), ("t", model.t[k])):
            for l, (W, b) in enumerate(zip(net.W, net.b)):
                arrays[f"layer{k}.{name}.W{l}"] = W.detach()
                arrays[f"layer{k}.{name}.b{l}"] = b.detach()
        for name in ("log_gamma", "beta", "m", "v"):
            arrays[f"bn{k}.{name}"] = getattr(model, name)[k]
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), np.ascontiguousarray(a.numpy()))
    print(f"real_nvp: {len(arrays)} arrays, mean log p {lp.mean().item():.6f}")


if __name__ == "__main__":
    main()
