"""NumPy baseline for bench_kernel_tests: the same MMD two-sample and HSIC independence permutation tests
as kef/mmd_test.hpp and kef/hsic_test.hpp (docs/math.md §8.9, §8.10), vectorised.

    kernel_tests_numpy.py X.npy Y.npy SIGMA PERMUTATIONS [REPS]

Gaussian kernel exp(−‖x − y‖²/(2σ²)). MMD: X against Y, pooled Gram matrix K formed once, every
labelling's statistic from the one product K @ A (A: N x (P + 1) indicators). HSIC: pairs (x_i, y_i),
centred Gram matrices formed once, each permutation Σ K̃ ∘ L̃[p][:, p]. Both with the Gamma
approximation. Prints "key value" lines: statistics and best-of-REPS seconds (default 1).
"""
import sys
import time

import numpy as np
from scipy.special import gammaincc


def gram(A, B, sigma):
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * sigma**2))


def gamma_pvalue(stat, mean, var):
    if stat <= 0:
        return 1.0
    return gammaincc(mean * mean / var, stat / (var / mean))


def mmd(X, Y, sigma, P, rng):
    n, m = len(X), len(Y)
    N = n + m
    Z = np.vstack([X, Y])
    K = gram(Z, Z, sigma)
    A = np.zeros((N, P + 1))
    A[:n, 0] = 1.0
    for p in range(1, P + 1):
        A[rng.choice(N, n, replace=False), p] = 1.0
    KA = K @ A
    r = K.sum(1)
    d = np.diag(K)
    T, tr = r.sum(), d.sum()
    aKa = (A * KA).sum(0)
    aK1 = A.T @ r
    ad = A.T @ d
    sxx = aKa - ad
    sxy = aK1 - aKa
    syy = T - 2 * aK1 + aKa - (tr - ad)
    u = sxx / (n * (n - 1)) + syy / (m * (m - 1)) - 2 * sxy / (n * m)
    b = aKa / n**2 + (T - 2 * aK1 + aKa) / m**2 - 2 * sxy / (n * m)
    p_value = (1 + np.count_nonzero(u[1:] >= u[0])) / (1 + P)
    s = 1 / n + 1 / m
    mean = s * (tr / N - (T - tr) / (N * (N - 1)))
    Kc = K - r[:, None] / N - r[None, :] / N + T / N**2
    off = ((Kc * Kc).sum() - (np.diag(Kc) ** 2).sum()) / (N * (N - 1))
    return u[0], b[0], p_value, gamma_pvalue(b[0], mean, 2 * s * s * off)


def hsic(X, Y, sigma, P, rng):
    n = len(X)
    K, L = gram(X, X, sigma), gram(Y, Y, sigma)
    Kh, Lh = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    k1, l1 = Kh.sum(1), Lh.sum(1)
    unbiased = ((Kh * Lh).sum() + k1.sum() * l1.sum() / ((n - 1) * (n - 2)) - 2 / (n - 2) * k1 @ l1) / (n * (n - 3))

    def centre(M):
        mu = M.mean(0)
        return M - mu[:, None] - mu[None, :] + mu.mean()

    Kc, Lc = centre(K), centre(L)
    stat = (Kc * Lc).sum() / n**2
    perm = np.empty(P)
    for p in range(P):
        q = rng.permutation(n)
        perm[p] = (Kc * Lc[q][:, q]).sum() / n**2
    p_value = (1 + np.count_nonzero(perm >= stat)) / (1 + P)
    mean = np.trace(Kc) * np.trace(Lc) / (n * n * (n - 1))

    def off(M):
        return ((M * M).sum() - (np.diag(M) ** 2).sum()) / (n * (n - 1))

    return stat, unbiased, p_value, gamma_pvalue(stat, mean, 2 * off(Kc) * off(Lc) / n**2)


def main():
    X, Y = np.load(sys.argv[1]), np.load(sys.argv[2])
    sigma, P = float(sys.argv[3]), int(sys.argv[4])
    reps = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    best = {"mmd": np.inf, "hsic": np.inf}
    for _ in range(reps):
        rng = np.random.default_rng(2)
        t0 = time.perf_counter()
        m = mmd(X, Y, sigma, P, rng)
        best["mmd"] = min(best["mmd"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        h = hsic(X, Y, sigma, P, rng)
        best["hsic"] = min(best["hsic"], time.perf_counter() - t0)
    print("numpy_mmd2_unbiased %.17g\nnumpy_mmd2_biased %.17g\nnumpy_mmd_pvalue %.6g\nnumpy_mmd_gamma_pvalue %.6g" % m)
    print("numpy_hsic %.17g\nnumpy_hsic_unbiased %.17g\nnumpy_hsic_pvalue %.6g\nnumpy_hsic_gamma_pvalue %.6g" % h)
    print("numpy_mmd_seconds %.6g\nnumpy_hsic_seconds %.6g" % (best["mmd"], best["hsic"]))


if __name__ == "__main__":
    main()
