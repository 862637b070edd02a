#!/usr/bin/python3
"""kef's KSDAgg beside the reference NumPy implementation (antoninschrab/ksdagg, ksdagg/np.py) on
shared inputs: the same IMQ bandwidth collection (to 1e-12), the same unpermuted statistic per
bandwidth (to 1e-10, relative), and, since the two draw different Rademacher signs, rejection rates
over repeated trials that agree within Monte Carlo error.

Both are given the same score values: the rows come from a shifted or scaled Gaussian and the score is
that of N(mu, diag(sigma^2)), -(x - mu) / sigma^2, in closed form; kef takes them through
kef.ksdagg_scores (the library's ksd_agg, as kef.ksdagg and the evaluator ksdagg), the reference as its
score_X.

The reference is not part of kef: pass the directory of a checkout (the one holding ksdagg/np.py) as
--reference or in KEF_KSDAGG_REFERENCE. Without it the script exits 77, which ctest reports as a
skipped test. kef's Python package must be importable (PYTHONPATH=build/python).

    PYTHONPATH=build/python ksdagg_reference.py --reference ~/src/ksdagg [--trials 40]
"""
import argparse
import os
import sys

import numpy as np

from reference_checks import SKIP, load_module, rates_agree


def load_reference(directory):
    return load_module(directory, os.path.join("ksdagg", "np.py"), "ksdagg_reference_np").ksdagg


def gaussian_score(X, mu, sigma):
    return -(X - mu) / sigma ** 2


def compare_case(name, ksdagg, kef, X, scores, number_bandwidths):
    """Bandwidths and unpermuted statistics of every single test; returns the number of failures."""
    B = 500  # the statistics and bandwidths do not depend on the draws
    _, ref = ksdagg(X, scores, number_bandwidths=number_bandwidths, B1=B, B2=B, return_dictionary=True)
    # alpha = 0.5 lets 500 draws reach every single test's level; the statistics do not depend on it.
    ours = kef.ksdagg_scores(X, scores, number_bandwidths=number_bandwidths, bootstrap_draws=B,
                             level_draws=B, alpha=0.5)["aggregate"]
    singles = ours["single_tests"]
    ref_tests = [v for k, v in ref.items() if k.startswith("Single test")]
    if len(singles) != len(ref_tests):
        print(f"{name}: {len(singles)} single tests in kef, {len(ref_tests)} in the reference")
        return 1
    failures = 0
    worst_b = worst_s = 0.0
    for s, r in zip(singles, ref_tests):
        if s["kernel"] != "imq" or not r.get("Kernel IMQ"):
            print(f"{name}: kernel {s['kernel']} in kef, {[k for k in r if k.startswith('Kernel')]} in the reference")
            failures += 1
        db = abs(s["bandwidth"] - r["Bandwidth"]) / abs(r["Bandwidth"])
        ds = abs(s["statistic"] - r["KSD"]) / abs(r["KSD"])
        worst_b, worst_s = max(worst_b, db), max(worst_s, ds)
        if db > 1e-12 or ds > 1e-10:
            print(f"{name}: λ={s['bandwidth']!r} (reference {r['Bandwidth']!r}): statistic "
                  f"{s['statistic']!r} against {r['KSD']!r} (relative {ds:.2e})")
            failures += 1
    print(f"{name}: {len(singles)} single tests, largest relative difference {worst_b:.1e} in the bandwidths, "
          f"{worst_s:.1e} in the statistics")
    return failures


def rejection_rates(name, ksdagg, kef, trials, n, shift, scale, rng):
    """Rates over `trials` samples of n rows of N(shift, scale^2 I) in 2 dimensions against N(0, I),
    both tests at their default settings (10 bandwidths, B1 = B2 = 2000, alpha = 0.05)."""
    ref_count = kef_count = 0
    for t in range(trials):
        X = shift + scale * rng.normal(size=(n, 2))
        S = gaussian_score(X, 0.0, 1.0)
        ref_count += ksdagg(X, S, seed=t)
        kef_count += int(kef.ksdagg_scores(X, S, seed=t)["aggregate"]["reject"])
    return rates_agree(name + ": ", kef_count, ref_count, trials)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default=os.environ.get("KEF_KSDAGG_REFERENCE", ""),
                        help="checkout of antoninschrab/ksdagg (default: $KEF_KSDAGG_REFERENCE)")
    parser.add_argument("--trials", type=int, default=40, help="trials for the rejection rates (0: none)")
    args = parser.parse_args()
    if not args.reference or not os.path.isfile(os.path.join(args.reference, "ksdagg", "np.py")):
        print("skipped: the reference KSDAgg (antoninschrab/ksdagg, ksdagg/np.py) is not present; give its "
              "checkout with --reference or KEF_KSDAGG_REFERENCE")
        return SKIP
    import kef
    ksdagg = load_reference(args.reference)
    rng = np.random.default_rng(11)
    failures = 0
    mu, sigma = np.array([0.3, -0.2, 0.0]), np.array([1.0, 0.5, 2.0])
    X = mu + sigma * rng.normal(size=(200, 3))
    X[:, 0] += 0.4  # off the model: the statistics are well away from zero
    failures += compare_case("shifted Gaussian, d = 3", ksdagg, kef, X, gaussian_score(X, mu, sigma), 10)
    X = rng.normal(size=(150, 1))
    failures += compare_case("the model's own sample, d = 1", ksdagg, kef, X, gaussian_score(X, 0.0, 1.0), 4)
    # More than 500 rows: both take the bandwidths' largest distance from the first 500.
    X = 1.5 * rng.normal(size=(520, 2))
    failures += compare_case("520 rows, d = 2", ksdagg, kef, X, gaussian_score(X, 0.0, 1.0), 6)
    # Distances all below 2: the largest bandwidth is 2/d.
    X = 0.1 * rng.normal(size=(80, 2))
    failures += compare_case("small distances", ksdagg, kef, X, gaussian_score(X, 0.0, 0.1), 5)
    if args.trials > 0:
        failures += rejection_rates("N(0, 1.3² I) against N(0, I), n = 100", ksdagg, kef, args.trials, 100, 0.0,
                                    1.3, rng)
        failures += rejection_rates("level, n = 100", ksdagg, kef, args.trials, 100, 0.0, 1.0, rng)
    print("FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
