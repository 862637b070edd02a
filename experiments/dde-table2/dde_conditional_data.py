#!/usr/bin/env python3
"""Writes the 16 conditional data sets of DDE's Table 2 as numeric CSVs, target column last.

    experiments/dde-table2/dde_conditional_data.py OUT_DIR [RAW_DIR]

RAW_DIR holds the R data sets as CSV (default: the repository's data/; data/README.md gives their
origin and licences). The columns and their order are those of the DDE reference code's files
(Hanjun-Dai/dde, data/r_benchmark/<set>.npy, commit ada381fe), whose loader takes the last column as y
and the others as x: row labels dropped, crabs' factors coded sp B=1 O=0 and sex M=1 F=0, ufc's Species
coded by the alphabetical order of its levels (DF=0 ... WP=9, R's factor codes from 0), UN3's incomplete
rows dropped (125 of 210 remain). experiments/dde-table2/README.md gives the source of each choice.
"""
import csv
import pathlib
import sys

# set: (columns in order, target last), or a function of the header and a row for coded columns.
COLUMNS = {
    "geyser": ["waiting", "duration"],
    "caution": ["x1", "x2", "y"],
    "ftcollinssnow": ["Early", "Late"],
    "highway": ["ADT", "Trks", "Lane", "Acpt", "Sigs", "Itg", "Slim", "Len", "Lwid", "Shld", "Hwy", "Rate"],
    "snowgeese": ["obs1", "obs2", "photo"],
    "GAGurine": ["Age", "GAG"],
    "topo": ["x", "y", "z"],
    "CobarOre": ["x", "y", "z"],
    "mcycle": ["times", "accel"],
    "BigMac2003": ["Bread", "Rice", "FoodIndex", "Bus", "Apt", "TeachGI", "TeachNI", "TaxRate", "TeachHours",
                   "BigMac"],
    "cpus": ["syct", "mmin", "mmax", "cach", "chmin", "chmax", "perf", "estperf"],
    "crabs": ["sp", "BD", "index", "FL", "RW", "CL", "CW", "sex"],
    "birthwt": ["low", "age", "lwt", "race", "smoke", "ptl", "ht", "ui", "ftv", "bwt"],
    "gilgais": ["pH00", "pH30", "pH80", "e00", "e30", "e80", "c00", "c30", "c80"],
    "UN3": ["ModernC", "Change", "PPgdp", "Frate", "Pop", "Fertility", "Purban"],
    "ufc": ["Plot", "Tree", "Species", "Dbh", "Height"],
}
CODES = {
    ("crabs", "sp"): {"B": 1, "O": 0},
    ("crabs", "sex"): {"M": 1, "F": 0},
}


def convert(name, raw, out):
    with open(raw / f"{name}.csv", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    index = {c: header.index(c) for c in COLUMNS[name]}
    codes = dict(CODES)
    if name == "ufc":
        levels = sorted({r[index["Species"]] for r in body})
        codes[("ufc", "Species")] = {lvl: k for k, lvl in enumerate(levels)}
    kept = []
    for r in body:
        cells = [r[index[c]] for c in COLUMNS[name]]
        if any(v in ("", "NA") for v in cells):
            if name != "UN3":
                sys.exit(f"dde_conditional_data: {name}.csv has a missing value in a used column: {r}")
            continue
        kept.append([codes[(name, c)][v] if (name, c) in codes else float(v) for c, v in zip(COLUMNS[name], cells)])
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS[name])
        for r in kept:
            w.writerow([repr(v) if isinstance(v, float) else v for v in r])
    return len(kept)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    raw = pathlib.Path(sys.argv[2]) if len(sys.argv) == 3 else pathlib.Path(__file__).resolve().parents[2] / "data"
    out.mkdir(parents=True, exist_ok=True)
    for name in COLUMNS:
        if not (raw / f"{name}.csv").exists():
            sys.exit(f"dde_conditional_data: no {raw / (name + '.csv')} (pass RAW_DIR)")
        convert(name, raw, out)


if __name__ == "__main__":
    main()
