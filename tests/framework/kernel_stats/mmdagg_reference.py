#!/usr/bin/python3
"""kef's MMDAgg beside the reference NumPy implementation (antoninschrab/mmdagg, mmdagg/np.py) on
shared inputs: the same bandwidth collection (to 1e-12), the same unpermuted statistic per kernel and
bandwidth (to 1e-10, relative), and, since the two draw different bootstrap signs and permutations,
rejection rates over repeated trials that agree within Monte Carlo error.

The reference is not part of kef: pass the directory of a checkout (the one holding mmdagg/np.py) as
--reference or in KEF_MMDAGG_REFERENCE. Without it the script exits 77, which ctest reports as a
skipped test. With --agginc (a checkout of antoninschrab/agginc) it also compares kef's HSICAgg with
the complete form of the reference HSICAggInc (R = N − 1): bandwidth pairs to 1e-12, statistics to
1e-10.

    mmdagg_reference.py --kef build/kef --reference ~/src/mmdagg [--agginc ~/src/agginc] [--trials 30]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from reference_checks import SKIP, load_module, rates_agree


def load_reference(directory):
    return load_module(directory, os.path.join("mmdagg", "np.py"), "mmdagg_reference_np").mmdagg


def run_kef(kef, X, Y, workdir, extra):
    x_path = os.path.join(workdir, "x.npy")
    y_path = os.path.join(workdir, "y.npy")
    np.save(x_path, X)
    np.save(y_path, Y)
    cmd = [kef, "test", "two-sample", x_path, y_path, "--aggregate", "--json"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kef failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout)["aggregate"]


def compare_case(name, mmdagg, kef, X, Y, kernel, number_bandwidths, workdir, permutations=False):
    """Bandwidths and unpermuted statistics of every single test; returns the number of failures."""
    B = 500  # the statistics and bandwidths do not depend on the draws
    _, ref = mmdagg(X, Y, kernel=kernel, number_bandwidths=number_bandwidths, B1=B, B2=B,
                    return_dictionary=True, permutations_same_sample_size=permutations)
    # alpha = 0.5 lets 500 draws reach every single test's level; the statistics do not depend on it.
    extra = ["--kernels", kernel, "--number-bandwidths", str(number_bandwidths),
             "--bootstrap-draws", str(B), "--level-draws", str(B), "--alpha", "0.5"]
    if permutations:
        extra += ["--approximation", "permutations"]
    ours = run_kef(kef, X, Y, workdir, extra)
    singles = ours["single_tests"]
    ref_tests = [v for k, v in ref.items() if k.startswith("Single test")]
    failures = 0
    if len(singles) != len(ref_tests):
        print(f"{name}: {len(singles)} single tests in kef, {len(ref_tests)} in the reference")
        return 1
    n = X.shape[0]
    # The reference's wild-bootstrap statistic is Σ_{i≠j} h_ij, kef's divides it by n(n − 1).
    scale = n * (n - 1) if ours["approximation"] == "wild bootstrap" else 1.0
    worst_b = worst_s = 0.0
    for s, r in zip(singles, ref_tests):
        ref_kernel = next(k[len("Kernel "):] for k in r if k.startswith("Kernel "))
        if ref_kernel != s["kernel"]:
            print(f"{name}: kernel {s['kernel']} in kef, {ref_kernel} in the reference")
            failures += 1
        db = abs(s["bandwidth"] - r["Bandwidth"]) / abs(r["Bandwidth"])
        ds = abs(s["statistic"] * scale - r["MMD"]) / abs(r["MMD"])
        worst_b, worst_s = max(worst_b, db), max(worst_s, ds)
        if db > 1e-12 or ds > 1e-10:
            print(f"{name}: {s['kernel']} λ={s['bandwidth']!r} (reference {r['Bandwidth']!r}): statistic "
                  f"{s['statistic'] * scale!r} against {r['MMD']!r} (relative {ds:.2e})")
            failures += 1
    print(f"{name}: {len(singles)} single tests ({ours['approximation']}), largest relative difference "
          f"{worst_b:.1e} in the bandwidths, {worst_s:.1e} in the statistics")
    return failures


def compare_hsic(kef, checkout, workdir):
    """HSICAgg against agginc's HSICAggInc with every pair of rows (R = N − 1): the same statistic."""
    import types
    sys.modules.setdefault("psutil", types.ModuleType("psutil"))  # only used for batch_size="auto"
    agginc = load_module(checkout, os.path.join("agginc", "np.py"), "agginc_reference_np")
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(81, 2))
    Y = rng.uniform(size=(81, 1)) + 0.3 * X[:, :1]
    _, ref = agginc.agginc("hsic", X, Y, R=39, B1=500, B2=500, batch_size=None, return_dictionary=True)
    np.save(os.path.join(workdir, "hx.npy"), X)
    np.save(os.path.join(workdir, "hy.npy"), Y)
    cmd = [kef, "test", "independence", os.path.join(workdir, "hx.npy"), os.path.join(workdir, "hy.npy"),
           "--aggregate", "--json", "--bootstrap-draws", "500", "--level-draws", "500"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kef failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    ours = json.loads(out.stdout)["aggregate"]["single_tests"]
    refs = [v for k, v in ref.items() if k.startswith("Single test")]
    if len(ours) != len(refs):
        print(f"hsicagg: {len(ours)} single tests in kef, {len(refs)} in the reference")
        return 1
    worst_b = worst_s = 0.0
    for s, r in zip(ours, refs):
        worst_b = max(worst_b, abs(s["bandwidth"] - r["Bandwidth X"]) / r["Bandwidth X"],
                      abs(s["bandwidth_y"] - r["Bandwidth Y"]) / r["Bandwidth Y"])
        worst_s = max(worst_s, abs(s["statistic"] - r["HSIC"]) / abs(r["HSIC"]))
    print(f"hsicagg: {len(ours)} single tests, largest relative difference {worst_b:.1e} in the bandwidths, "
          f"{worst_s:.1e} in the statistics")
    return 0 if worst_b <= 1e-12 and worst_s <= 1e-10 else 1


def rejection_rates(mmdagg, kef, trials, workdir):
    """Rates over `trials` pairs of samples, uniform against a perturbed uniform (shift 0.12 in one
    coordinate), n = 100 in 2 dimensions; both at their default settings."""
    rng = np.random.default_rng(2024)
    ref_count = kef_count = 0
    for t in range(trials):
        X = rng.uniform(size=(100, 2))
        Y = rng.uniform(size=(100, 2))
        Y[:, 0] += 0.12
        ref_count += mmdagg(X, Y, seed=t)
        kef_count += int(run_kef(kef, X, Y, workdir, ["--seed", str(t)])["reject"])
    return rates_agree("", kef_count, ref_count, trials)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kef", required=True, help="the kef command")
    parser.add_argument("--reference", default=os.environ.get("KEF_MMDAGG_REFERENCE", ""),
                        help="checkout of antoninschrab/mmdagg (default: $KEF_MMDAGG_REFERENCE)")
    parser.add_argument("--agginc", default=os.environ.get("KEF_AGGINC_REFERENCE", ""),
                        help="checkout of antoninschrab/agginc for HSICAgg (default: $KEF_AGGINC_REFERENCE)")
    parser.add_argument("--trials", type=int, default=30, help="trials for the rejection rates (0: none)")
    args = parser.parse_args()
    if not args.reference or not os.path.isfile(os.path.join(args.reference, "mmdagg", "np.py")):
        print("skipped: the reference MMDAgg (antoninschrab/mmdagg, mmdagg/np.py) is not present; give its "
              "checkout with --reference or KEF_MMDAGG_REFERENCE")
        return SKIP
    mmdagg = load_reference(args.reference)
    rng = np.random.default_rng(7)
    failures = 0
    with tempfile.TemporaryDirectory() as workdir:
        X = rng.uniform(size=(200, 10))
        Y = rng.uniform(size=(200, 10)) + 0.05
        failures += compare_case("equal sizes, all kernels", mmdagg, args.kef, X, Y, "all", 10, workdir)
        failures += compare_case("equal sizes, permutations", mmdagg, args.kef, X, Y, "laplace_gaussian", 6,
                                 workdir, permutations=True)
        failures += compare_case("unequal sizes", mmdagg, args.kef, X[:150], Y, "laplace_gaussian", 10, workdir)
        # Distances below 0.1: the smallest bandwidth comes from the 5% order statistic.
        failures += compare_case("small distances", mmdagg, args.kef, 0.01 * X[:120, :2], 0.01 * Y[:120, :2],
                                 "all_matern_l1_l2", 5, workdir)
        if args.agginc:
            failures += compare_hsic(args.kef, args.agginc, workdir)
        if args.trials > 0:
            failures += rejection_rates(mmdagg, args.kef, args.trials, workdir)
    print("FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
