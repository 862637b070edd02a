#!/usr/bin/python3
"""DDE Table 2: dde_conditional with the reference implementation's per-set settings against kef's
defaults, split by split (experiments/dde-table2/README.md).

    experiments/dde-table2/compare-dde-table2-settings.py REFERENCE_CSV DEFAULTS_CSV

REFERENCE_CSV is the summary.csv of `experiments/dde-table2/reproduce-dde-table2.sh --reference-settings`, DEFAULTS_CSV
that of a run with kef's defaults (set,seed,model,conditional_nll rows). Only the splits present in
both are compared. Prints a Markdown table: the settings (experiments/dde-table2/configs/
reference-settings.csv), both means ± sd (divisor n - 1), on how many splits the reference settings give
the lower NLL, the paper's DDE column, and whether each mean is within two of the paper's sds.
"""
import argparse
import csv
import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
SETS = ["geyser", "caution", "ftcollinssnow", "highway", "snowgeese", "GAGurine", "topo", "CobarOre", "mcycle",
        "BigMac2003", "cpus", "crabs", "birthwt", "gilgais", "UN3", "ufc"]
# DDE Table 2's DDE column (Dai et al. 2019), as in experiments/dde-table2/reproduce-dde-table2.sh.
PAPER_DDE = {
    "geyser": (0.55, 0.07), "caution": (0.95, 0.19), "ftcollinssnow": (1.49, 0.14), "highway": (1.18, 0.30),
    "snowgeese": (0.42, 0.31), "GAGurine": (0.43, 0.15), "topo": (1.02, 0.31), "CobarOre": (1.45, 0.23),
    "mcycle": (0.60, 0.15), "BigMac2003": (0.47, 0.36), "cpus": (-0.63, 0.77), "crabs": (-0.60, 0.26),
    "birthwt": (1.22, 0.15), "gilgais": (0.61, 0.10), "UN3": (1.03, 0.09), "ufc": (1.03, 0.10),
}


def read_runs(path):
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["model"] == "dde_conditional":
                runs[(row["set"], int(row["seed"]))] = float(row["conditional_nll"])
    return runs


def mean_sd(v):
    m = sum(v) / len(v)
    return m, (math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference_csv")
    ap.add_argument("defaults_csv")
    args = ap.parse_args()
    ref, dflt = read_runs(args.reference_csv), read_runs(args.defaults_csv)
    settings = {}
    with open(os.path.join(here, "configs", "reference-settings.csv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, fbd, sd, lam = line.strip().split(",")
            if name == "set":
                continue
            settings[name] = (fbd, sd, lam)
    print("| data set | f_bd | base_sd | λ | reference settings | kef defaults, same splits | better | paper "
          "| within (ref / defaults) |")
    print("|---|---|---|---|---|---|---|---|---|")
    within_ref = within_dflt = 0
    counts = set()
    for st in SETS:
        seeds = sorted(s for (name, s) in ref if name == st and (name, s) in dflt)
        if not seeds:
            print(f"{st}: no split in both files", file=sys.stderr)
            sys.exit(2)
        counts.add(len(seeds))
        r = [ref[(st, s)] for s in seeds]
        d = [dflt[(st, s)] for s in seeds]
        (rm, rs), (dm, ds) = mean_sd(r), mean_sd(d)
        pm, ps = PAPER_DDE[st]
        same = max(abs(a - b) for a, b in zip(r, d))
        if same < 1e-12:
            better = f"— (same settings; values within {same:.0e})"
        else:
            better = f"{sum(a < b for a, b in zip(r, d))}/{len(seeds)}"
        wr, wd = abs(rm - pm) <= 2 * ps, abs(dm - pm) <= 2 * ps
        within_ref += wr
        within_dflt += wd
        fbd, sd, lam = settings[st]
        print(f"| {st} | {fbd} | {sd} | {lam} | {rm:.2f} ± {rs:.2f} | {dm:.2f} ± {ds:.2f} | {better} | "
              f"{pm:.2f} ± {ps:.2f} | {'yes' if wr else 'no'} / {'yes' if wd else 'no'} |")
    print()
    print(f"Within the paper's mean ± 2 sd: {within_ref} of {len(SETS)} with the reference settings, "
          f"{within_dflt} of {len(SETS)} with kef's defaults on the same splits "
          f"({'/'.join(str(c) for c in sorted(counts))} splits per set).")


if __name__ == "__main__":
    main()
