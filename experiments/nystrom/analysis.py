"""Analysis of the Nyström KEF study (reproduce-nystrom.sh): basis sizes, the table and the curves.

    analysis.py basis-size N THETA
        m = ceil(N^THETA log N), at most N, for THETA half (1/2) or third (1/3)
    analysis.py table OUT QUICK DIMS SIZES SEEDS TARGET
        from OUT/D<d>/n<n>/<method>/seed<s>/results.json: table.md's text on stdout (mean ± sd over
        the seeds of J and the chosen fit's time per D, n and method) and OUT/csv/D<d>-<method>-<J|time>.csv
        (one CSV per curve: x = n, y = the mean, lower and upper the seeds' range)

QUICK is 1 for a --quick study, 0 otherwise; DIMS, SIZES and SEEDS are comma-separated integers; TARGET
is grid or rings.
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.summary import load_json, mean_sd, two_digit_spread  # noqa: E402

METHODS = [("full", "full"), ("nystrom_half", "Nyström θ = 1/2"), ("nystrom_third", "Nyström θ = 1/3"),
           ("lite", "lite, matched M")]


def basis_size(n, theta):
    """The Nyström basis size m = ceil(n^θ log n), at most n."""
    if theta == "half":
        return min(n, math.ceil(n ** 0.5 * math.log(n)))
    return min(n, math.ceil(n ** (1 / 3) * math.log(n)))


def spread(xs):
    # The sd to two significant digits, the mean to the same decimal place.
    if not xs:
        return "—"
    mean, sd = mean_sd(xs)
    if sd == 0:
        return f"{mean:.3g}"
    return two_digit_spread(mean, sd)


def table(out, quick, dims, sizes, seeds, target):
    """table.md's text; writes the curves' CSVs into out/csv as it goes. Exits naming the cell when a
    metric is not finite."""
    lines = [f"# Nyström KEF study (kef), target: {target}", ""]
    if quick:
        lines += ["**Quick mode (smoke test): tiny sizes and grid; these numbers are not results.**", ""]
    lines += [f"Held-out Fisher divergence J (test split) / fit time of the chosen candidate (s), mean ± sd over "
              f"seeds {', '.join(map(str, seeds))}; bandwidth and λ chosen by held-out score matching. "
              "Basis size M in brackets (Nyström: m·D; lite: points).", ""]
    for d in dims:
        lines += [f"{target}, D = {d}", "", "| n | " + " | ".join(label for _, label in METHODS) + " |",
                  "|---" * (len(METHODS) + 1) + "|"]
        curves = {key: [] for key, _ in METHODS}
        for n in sizes:
            cells = []
            for key, _ in METHODS:
                runs = []
                for s in seeds:
                    path = os.path.join(out, f"D{d}", f"n{n}", key, f"seed{s}", "results.json")
                    if os.path.exists(path):
                        runs.append(load_json(path))
                if not runs:
                    cells.append("—")
                    continue
                model = [next(iter(r["models"].values())) for r in runs]
                J = [m["metrics"]["fisher_divergence"] for m in model]
                T = [m["fit"]["seconds"] for m in model]
                if not all(math.isfinite(x) for x in J + T):
                    sys.exit(f"D = {d}, n = {n}, {key}: a non-finite metric")
                size = model[0]["fit"].get("basis_size")
                if size is None:
                    cfg = runs[0]["config"]["model"][0]["estimator"]
                    size = cfg.get("inducing_points", n * d)
                few = f" ({len(runs)} seed{'s' if len(runs) > 1 else ''})" if len(runs) < len(seeds) else ""
                cells.append(f"{spread(J)} / {spread(T)} [{int(size)}]{few}")
                curves[key].append((n, J, T))
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
        # One CSV per curve: x = n, y = mean, the band spanning the seeds (positive, for log axes).
        for key, _ in METHODS:
            for what, index in (("J", 1), ("time", 2)):
                with open(os.path.join(out, "csv", f"D{d}-{key}-{what}.csv"), "w") as f:
                    f.write("x,y,lower,upper\n")
                    for point in curves[key]:
                        xs = point[index]
                        f.write(f"{point[0]},{statistics.fmean(xs)!r},{min(xs)!r},{max(xs)!r}\n")
    return "\n".join(lines)


def int_list(text):
    return [int(v) for v in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("basis-size", help="m = ceil(n^theta log n), at most n")
    p.add_argument("n", type=int)
    p.add_argument("theta", choices=["half", "third"])
    p = sub.add_parser("table", help="table.md's text on stdout, the curves' CSVs into OUT/csv")
    p.add_argument("out", help="the study's output directory")
    p.add_argument("quick", choices=["0", "1"], help="1 for a --quick study")
    p.add_argument("dims", type=int_list, help="the dimensions D, comma-separated")
    p.add_argument("sizes", type=int_list, help="the training sizes n, comma-separated")
    p.add_argument("seeds", type=int_list, help="the seeds, comma-separated")
    p.add_argument("target", help="the target's name (grid or rings)")
    args = parser.parse_args(argv)
    if args.command == "basis-size":
        print(basis_size(args.n, args.theta))
    else:
        print(table(args.out, args.quick == "1", args.dims, args.sizes, args.seeds, args.target))


if __name__ == "__main__":
    main()
