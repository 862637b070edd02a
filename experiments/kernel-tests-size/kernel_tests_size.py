"""Size (type I error) of kef's kernel tests under the null at α = 0.05, for each bandwidth rule.

    kernel_tests_size.py [--kef build/bin/kef] [--reps 400] [--n 100] [--permutations 199]
                         [--rules median,bkl] [--seed 0] [--threads 1]

Null data: for the two-sample test, X and Y i.i.d. N(0, I₂) samples of --n rows each; for the independence
test, X ~ N(0, I₂) and Y ~ N(0, I₂) drawn independently, --n pairs. Each data set is tested once with
`kef test two-sample|independence --kernel-bandwidth RULE` (both bandwidths of the independence test
by the same rule). Printed per test and rule: the rejection rate by the permutation p-value and by the
Gamma approximation, each with its Monte Carlo standard error √(r(1 − r)/reps); a test holds its level
when 0.05 lies within about two standard errors. Data sets BKL refuses (a maximiser on a bound) are
counted and left out of the rate.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kef", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "kef"))
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--permutations", type=int, default=199)
    ap.add_argument("--rules", default="median,bkl")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    alpha = 0.05
    print("test          rule    reps  reject_perm  se     reject_gamma  se     refused")
    with tempfile.TemporaryDirectory() as tmp:
        x_path, y_path = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        for test in ["two-sample", "independence"]:
            for rule in args.rules.split(","):
                perm = gamma = done = refused = 0
                for r in range(args.reps):
                    rng = np.random.default_rng([args.seed, 0 if test == "two-sample" else 1, r])
                    np.save(x_path, rng.standard_normal((args.n, 2)))
                    np.save(y_path, rng.standard_normal((args.n, 2)))
                    cmd = [args.kef, "test", test, x_path, y_path, "--json", "--kernel-bandwidth", rule,
                           "--permutations", str(args.permutations), "--seed", str(r), "--threads", str(args.threads)]
                    if test == "independence":
                        cmd += ["--kernel-bandwidth-y", rule]
                    out = subprocess.run(cmd, capture_output=True, text=True)
                    if out.returncode == 2 and rule == "bkl" and "bound" in out.stderr:
                        refused += 1
                        continue
                    if out.returncode != 0:
                        sys.exit("kef test failed: " + out.stderr)
                    j = json.loads(out.stdout)
                    perm += j["p_value"]["permutation"] <= alpha
                    gamma += j["p_value"]["gamma"] <= alpha
                    done += 1
                rp, rg = perm / max(done, 1), gamma / max(done, 1)
                se = lambda p: math.sqrt(p * (1 - p) / max(done, 1))
                print("%-13s %-7s %-5d %-12.3f %-6.3f %-13.3f %-6.3f %d" % (test, rule, done, rp, se(rp), rg, se(rg),
                                                                          refused), flush=True)


if __name__ == "__main__":
    main()
