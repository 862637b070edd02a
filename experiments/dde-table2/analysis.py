"""Analysis of DDE's Table 2 (reproduce-dde-table2.sh): the configs of --models and the table.

    analysis.py filter-configs SRC DST MODELS SET...
        copies SRC/<set>.toml to DST/<set>.toml with only the [[model]] tables named in MODELS
        (comma-separated); each [[model]] runs from its line to the next top-level table that is not
        one of its own [model.*] tables
    analysis.py table OUT SEEDS DDE_ITERATIONS SET...
        from OUT/<set>/seed-S/results.json (SEEDS space-separated): OUT/summary.csv (set, seed, model,
        conditional_nll) and OUT/table.md (mean ± sd per set and method beside the paper's numbers),
        the table also on stdout; DDE_ITERATIONS labels the DDE column
"""
import argparse
import json
import math
import re

# DDE Table 2 (Dai et al. 2019), the ε-KDE and LSCDE columns (mean ± sd over 20 splits; "mecycle" there).
PAPER = {
    "geyser": ((1.11, 0.02), (0.7, 0.01)), "caution": ((1.25, 0.19), (1.19, 0.02)),
    "ftcollinssnow": ((1.53, 0.05), (1.56, 0.01)), "highway": ((2.24, 0.64), (1.98, 0.04)),
    "snowgeese": ((1.35, 0.17), (1.39, 0.05)), "GAGurine": ((0.92, 0.05), (0.7, 0.01)),
    "topo": ((1.18, 0.09), (0.83, 0.0)), "CobarOre": ((1.65, 0.09), (1.61, 0.02)),
    "mcycle": ((1.25, 0.23), (0.93, 0.01)), "BigMac2003": ((1.29, 0.14), (1.63, 0.03)),
    "cpus": ((1.01, 0.10), (1.04, 0.07)), "crabs": ((0.99, 0.09), (-0.07, 0.11)),
    "birthwt": ((1.48, 0.01), (1.43, 0.01)), "gilgais": ((1.35, 0.03), (0.73, 0.05)),
    "UN3": ((1.78, 0.14), (1.42, 0.12)), "ufc": ((1.40, 0.02), (1.03, 0.01)),
}
# The DDE column of the same table.
PAPER_DDE = {
    "geyser": (0.55, 0.07), "caution": (0.95, 0.19), "ftcollinssnow": (1.49, 0.14), "highway": (1.18, 0.30),
    "snowgeese": (0.42, 0.31), "GAGurine": (0.43, 0.15), "topo": (1.02, 0.31), "CobarOre": (1.45, 0.23),
    "mcycle": (0.60, 0.15), "BigMac2003": (0.47, 0.36), "cpus": (-0.63, 0.77), "crabs": (-0.60, 0.26),
    "birthwt": (1.22, 0.15), "gilgais": (0.61, 0.10), "UN3": (1.03, 0.09), "ufc": (1.03, 0.10),
}
# The KCEF column (Arbel & Gretton 2018); None: "N/A" in the paper (numerically unstable there).
PAPER_KCEF = {
    "geyser": (1.21, 0.04), "caution": (0.99, 0.01), "ftcollinssnow": (1.46, 0.0), "highway": (1.17, 0.01),
    "snowgeese": (0.72, 0.02), "GAGurine": (0.46, 0.0), "topo": (0.67, 0.01), "CobarOre": (3.42, 0.03),
    "mcycle": (0.56, 0.01), "BigMac2003": (0.59, 0.01), "cpus": None, "crabs": None,
    "birthwt": (1.18, 0.13), "gilgais": (0.65, 0.08), "UN3": (1.15, 0.21), "ufc": (0.96, 0.14),
}
MODELS = ["eps_kde", "lscde", "kcef", "dde_conditional"]
LABELS = (("eps_kde", "ε-KDE"), ("lscde", "LSCDE"), ("kcef", "KCEF"), ("dde_conditional", "DDE"))


def filter_config(path, keep):
    """The text of the config at path with only the [[model]] tables whose name is in keep."""
    out, block, name = [], None, None

    def flush():
        if block is not None and name in keep:
            out.extend(block)
    with open(path) as f:
        for line in f:
            head = line.strip()
            if head == "[[model]]":
                flush()
                block, name = [line], None
                continue
            if block is not None:
                if head.startswith("[") and not head.startswith("[model."):
                    flush()
                    block = None
                    out.append(line)
                    continue
                m = re.match(r'name\s*=\s*"([^"]*)"', head)
                if m and name is None:
                    name = m.group(1)
                block.append(line)
            else:
                out.append(line)
    flush()
    return "".join(out)


def filter_configs(src, dst, keep, sets):
    for st in sets:
        text = filter_config(f"{src}/{st}.toml", keep)
        with open(f"{dst}/{st}.toml", "w") as f:
            f.write(text)


def ms(v):
    # The mean and the sd with divisor n − 1 (0 for one value).
    mean = sum(v) / len(v)
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return mean, sd


def paper_cell(m, st):
    if m == "eps_kde":
        p = PAPER[st][0]
    elif m == "lscde":
        p = PAPER[st][1]
    elif m == "kcef":
        p = PAPER_KCEF[st]
    else:
        p = PAPER_DDE[st]
    return " N/A |" if p is None else f" {p[0]:.2f} ± {p[1]:.2f} |"


def table(out, seeds, dde_iterations, sets):
    """Writes out/summary.csv and out/table.md; returns the table's lines."""
    rows, cells = [], {}
    for st in sets:
        for s in seeds:
            with open(f"{out}/{st}/seed-{s}/results.json") as f:
                r = json.load(f)
            for m in MODELS:
                if m not in r["models"]:
                    continue
                v = r["models"][m]["metrics"]["conditional_nll"]
                rows.append((st, s, m, v))
                cells.setdefault((st, m), []).append(v)
    with open(f"{out}/summary.csv", "w") as f:
        f.write("set,seed,model,conditional_nll\n")
        for st, s, m, v in rows:
            f.write(f"{st},{s},{m},{v!r}\n")
    present = {k[1] for k in cells}
    with_dde = "dde_conditional" in present
    # The columns of the methods that ran (--models), each beside the paper's.
    columns = [(m, label) for m, label in LABELS if m in present]
    lines = [f"Negative log-likelihood of p(y | x) (standardised units), mean ± sd over {len(seeds)} splits "
             "(sd with divisor n − 1); the paper's numbers (DDE Table 2) beside."
             + (f" DDE trained for {dde_iterations} iterations." if with_dde else ""), "",
             "| data set |" + "".join(f" {label} (kef) | {label} (paper) |" for _, label in columns),
             "|---|" + "---|---|" * len(columns)]
    for st in sets:
        line = f"| {st} |"
        for m, _ in columns:
            v = ms(cells[(st, m)]) if (st, m) in cells else None
            # One split has no spread: its value alone, not "± 0.00".
            cell = (f" {v[0]:.2f} ± {v[1]:.2f} |" if len(cells[(st, m)]) > 1 else f" {v[0]:.2f} (1 split) |") if v else " – |"
            line += cell + paper_cell(m, st)
        lines.append(line)
    with open(f"{out}/table.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("filter-configs", help="copies of the configs with only some [[model]] tables")
    p.add_argument("src", help="the configs' directory")
    p.add_argument("dst", help="where the copies go")
    p.add_argument("models", help="the models to keep, comma-separated")
    p.add_argument("sets", nargs="*", help="the data sets (SRC/<set>.toml)")
    p = sub.add_parser("table", help="summary.csv and table.md from the runs")
    p.add_argument("out", help="the study's output directory")
    p.add_argument("seeds", help="the splits, space-separated")
    p.add_argument("dde_iterations", help="DDE's training iterations (a label)")
    p.add_argument("sets", nargs="*", help="the data sets")
    args = parser.parse_args(argv)
    if args.command == "filter-configs":
        filter_configs(args.src, args.dst, set(args.models.split(",")), args.sets)
    else:
        print("\n".join(table(args.out, args.seeds.split(), args.dde_iterations, args.sets)))


if __name__ == "__main__":
    main()
