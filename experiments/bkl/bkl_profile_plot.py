#!/usr/bin/python3
"""The profile of Bayesian kernel learning's log pseudolikelihood in the length scale ℓ (docs/math.md §9.4),
from the results.json of a pipeline with `sigma = "bkl"` (or the --json output of `kef test witness
--kernel-bandwidth bkl`), drawn with `kef lineplot` (log ℓ axis), the chosen ℓ and the median heuristic's ℓ
marked.

    bkl_profile_plot.py RESULTS.json --out FIG.png [--model NAME] [--key KEY] [--window DELTA] [--kef build/bin/kef]

results.json holds, under models.NAME.chosen.KEY (KEY e.g. "model[0].kernel.sigma"): "value" (the chosen
ℓ) and "bkl" with "profile" {"lengthscale": [...], "log_likelihood": [...]} (null where log L is −∞),
"log_likelihood" (at the mode), "median_lengthscale" and "median_log_likelihood". --model and --key may be
left out when there is only one BKL choice. --window DELTA keeps the profile points within DELTA of the
maximum (log L falls by orders of magnitude at small ℓ, which would flatten the interesting part); by
default DELTA = max(50, 25% of |max log L|); --window 0 keeps every point. The
series' CSVs are written next to FIG.png (FIG-profile.csv, FIG-mode.csv, FIG-median.csv).
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--key", default="")
    ap.add_argument("--window", type=float, default=-1.0)
    ap.add_argument("--kef", default=os.path.join(here, "..", "..", "build", "bin", "kef"))
    args = ap.parse_args()
    with open(args.results) as f:
        results = json.load(f)
    found = []
    if results.get("test") == "witness" and "bkl" in results.get("bandwidth", {}):
        found.append(("kef test witness", "--kernel-bandwidth " + results["bandwidth"]["rule"],
                      {"value": results["bandwidth"]["sigma"], "bkl": results["bandwidth"]["bkl"]}))
    for name, model in results.get("models", {}).items():
        for key, choice in model.get("chosen", {}).items():
            if isinstance(choice, dict) and "bkl" in choice and (not args.model or name == args.model) and (
                    not args.key or key == args.key):
                found.append((name, key, choice))
    if len(found) != 1:
        what = ", ".join("%s: %s" % (n, k) for n, k, _ in found) or "none"
        sys.exit("%s: expected exactly one BKL choice (sigma = \"bkl\") matching --model/--key, found %s"
                 % (args.results, what))
    name, key, choice = found[0]
    bkl = choice["bkl"]
    pts = [(l, v) for l, v in zip(bkl["profile"]["lengthscale"], bkl["profile"]["log_likelihood"]) if v is not None]
    if not pts:
        sys.exit("%s: the profile has no finite value" % args.results)
    top = max(v for _, v in pts)
    if args.window < 0:
        args.window = max(50.0, 0.25 * abs(top))
    if args.window > 0:
        pts = [(l, v) for l, v in pts if v >= top - args.window]
    low = min(v for _, v in pts)
    stem = os.path.splitext(args.out)[0]

    def write(path, rows):
        with open(path, "w") as f:
            f.write("x,y\n")
            for x, y in rows:
                f.write("%.17g,%.17g\n" % (x, y))
        return path

    series = ["log L (profile, τ² = %g)=%s" % (bkl["tau2"], write(stem + "-profile.csv", pts)),
              "chosen ℓ = %.4g (%s)=%s" % (choice["value"], bkl["method"],
                                           write(stem + "-mode.csv", [(choice["value"], low),
                                                                      (choice["value"], bkl["log_likelihood"])]))]
    lo_l, hi_l = pts[0][0], pts[-1][0]
    if bkl.get("median_lengthscale") and lo_l <= bkl["median_lengthscale"] <= hi_l and \
            bkl.get("median_log_likelihood") is not None and bkl["median_log_likelihood"] >= low:
        series.append("median heuristic ℓ = %.4g=%s" % (bkl["median_lengthscale"], write(
            stem + "-median.csv", [(bkl["median_lengthscale"], bkl["median_log_likelihood"])])))
    cmd = [args.kef, "lineplot"] + series + [
        "--out", args.out, "--log-x", "--x-label", "length scale ℓ", "--y-label", "log pseudolikelihood",
        "--title", "Bayesian kernel learning: %s, %s" % (name, key),
        "--footnote", "%d landmarks, %d data rows · flat prior on log ℓ over [%.3g, %.3g]%s" % (
            bkl["landmarks"], bkl["rows"], bkl["lower"], bkl["upper"],
            " · points within %.3g of the maximum" % args.window if args.window > 0 else "")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("kef lineplot failed (exit %d): %s" % (out.returncode, out.stderr))
    print("%s: ℓ = %.6g (%s), log L = %.6g; figure %s" % (key, choice["value"], bkl["method"], bkl["log_likelihood"],
                                                        args.out))


if __name__ == "__main__":
    main()
