"""Analysis of DKEF's real-data study (reproduce-dkef-real.sh): --quick's overrides and the summaries.

    analysis.py quick-overrides CONFIG
        --set overrides (one KEY=VALUE a line) that make every model of CONFIG a smoke test
    analysis.py collect OUT QUICK SEED...
        from OUT/<data set>/seed-S/results.json (the seeds whose run finished): OUT/summary.csv (a
        row per data set, seed and model: every metric), OUT/fits.csv (a row per data set, seed and
        model: how the fit ended and how DKEF's and KEF's normaliser was estimated), OUT/table.md.tmp
        (mean ± sd over the seeds) and OUT/figure3.csv (Figure 3's long table: a panel per data set
        and metric, a bar per model, a point per seed)
    analysis.py retabulate DIR [--quick]
        the table (on stdout) and DIR/figure3.csv again from DIR/summary.csv and DIR/timings.tsv
        alone (a study's results kept without its runs, as experiments/dkef-real/results/)

QUICK is 1 for a --quick study (the table then says its numbers are not results), 0 otherwise.
"""
import argparse
import csv
import math
import os
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.summary import QUICK_NOTE, load_json, mean_sd, read_timings, sd_decimals  # noqa: E402

DATASETS = [("redwine", "RedWine"), ("whitewine", "WhiteWine"), ("parkinsons", "Parkinsons")]
# (key in results.json, column of the table / panel title)
METRICS = [("fssd2", "FSSD²"), ("relative_fssd_pvalue", "rel. FSSD p-value vs DKEF"),
           ("score_matching_loss", "score-matching loss"), ("log_likelihood", "log-likelihood (whitened)")]


def quick_overrides(config):
    """--quick's --set overrides for every model of the config, read from the config itself (kef's
    --set selects one model per key, by name), so that the smoke test follows any change to the configs."""
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    lines = []
    dkef = {"max_steps": 6, "eval_every": 3, "stage2_steps": 1, "batch_fit": 50, "batch_loss": 50,
            "inducing_points": 30}
    flow = {"max_epochs": 2, "hidden_units": "[8, 8]", "layers": 2, "components": 2}
    for m in cfg.get("model", []):
        est, prefix = m["estimator"], f"model.{m['name']}.estimator"
        if est["type"] == "dkef":
            for k, v in dkef.items():
                lines.append(f"{prefix}.{k}={v}")
        elif est["type"] in ("made", "made_mog", "maf", "maf_mog", "real_nvp"):
            for k, v in flow.items():
                if k == "layers" and est["type"] in ("made", "made_mog"):
                    continue
                if k == "components" and est["type"] not in ("made_mog", "maf_mog"):
                    continue
                lines.append(f"{prefix}.{k}={v}")
        elif est["type"] == "gmm":
            lines.append(f"{prefix}.components=[1, 2]")
            lines.append(f"{prefix}.restarts=1")
    for i, e in enumerate(cfg.get("evaluate", [])):
        if e["type"] in ("fssd", "relative_fssd"):
            lines.append(f"evaluate[{i}].J=10")
        if e["type"] == "fssd":
            lines.append(f"evaluate[{i}].null_draws=200")
        if e["type"] == "log_likelihood":
            lines.append(f"evaluate[{i}].samples=4096")
            lines.append(f"evaluate[{i}].ais_particles=16")
            lines.append(f"evaluate[{i}].ais_temperatures=5")
    return lines


def read_runs(out, seeds):
    """The finished runs, {(data set, seed): results}, and summary.csv's rows (a dict per data set,
    seed and model). Exits naming the file when a run's seed is not its directory's."""
    rows, runs = [], {}
    for ds, _ in DATASETS:
        for s in seeds:
            f = os.path.join(out, ds, f"seed-{s}", "results.json")
            if not os.path.exists(f):
                continue
            r = load_json(f)
            if r.get("seed") != s:
                sys.exit(f"reproduce-dkef-real: {f} ran with seed {r.get('seed')}, expected {s}")
            runs[(ds, s)] = r
            for model, v in r["models"].items():
                mt = v["metrics"]
                row = {"dataset": ds, "seed": s, "model": model,
                       "dim": r["data"].get("dim", len(r["data"].get("columns", []))),
                       "test_rows": r["data"].get("test_rows")}
                for k, _ in METRICS:
                    row[k] = mt.get(k)
                # Figure 3 reports the log-likelihood in the whitened space the models were fitted in
                # (docs/outputs.md, "Units of the metrics"); results.json's log_likelihood is in data units.
                row["log_likelihood"] = mt.get("log_likelihood_whitened", mt.get("log_likelihood_standardized"))
                row["log_likelihood_data_units"] = mt.get("log_likelihood")
                row["log_likelihood_reliable"] = mt.get("reliable")
                row["log_normalizer_stderr"] = mt.get("log_normalizer_stderr")
                row["log_normalizer_disagreement"] = mt.get("log_normalizer_disagreement")
                row["effective_sample_size"] = mt.get("effective_sample_size")
                rows.append(row)
    return runs, rows


# fits.csv's columns besides data set, seed and model: the fit's (results.json "fit") and the
# log-likelihood evaluator's (results.json "metrics"), empty where a model has none (a flow has a
# best_epoch, DKEF and KEF a best_step; only DKEF and KEF have an estimated normaliser and its AIS check).
FIT_KEYS = ["seconds", "iterations", "best_step", "best_epoch"]
NORMALIZER_KEYS = ["log_normalizer", "log_normalizer_stderr", "proposals", "effective_sample_size",
                   "log_normalizer_check", "log_normalizer_check_stderr", "check_effective_sample_size",
                   "ais_acceptance", "ais_divergences", "log_normalizer_disagreement", "reliable"]


def write_fits(path, runs):
    """fits.csv: a row per data set, seed and model of runs ({(data set, seed): results})."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["dataset", "seed", "model"] + [f"fit_{k}" for k in FIT_KEYS] + NORMALIZER_KEYS)
        for (ds, s), r in runs.items():
            for model, v in r["models"].items():
                fit, mt = v.get("fit", {}), v["metrics"]
                w.writerow([ds, s, model] + ["" if fit.get(k) is None else fit[k] for k in FIT_KEYS]
                           + ["" if mt.get(k) is None else mt[k] for k in NORMALIZER_KEYS])


def read_summary(path):
    """summary.csv's rows as read_runs makes them, and each finished run's data sizes
    ({(data set, seed): {"dim", "test_rows"}})."""
    def value(text, kind=float):
        return None if text == "" else kind(text)
    rows, data = [], {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            parsed = {}
            for k, text in row.items():
                if k in ("dataset", "model"):
                    parsed[k] = text
                elif k in ("seed", "dim", "test_rows"):
                    parsed[k] = value(text, int)
                else:
                    parsed[k] = value(text)
            rows.append(parsed)
            data[(parsed["dataset"], parsed["seed"])] = {"dim": parsed["dim"], "test_rows": parsed["test_rows"]}
    return rows, data


def write_summary(path, rows):
    fields = list(rows[0].keys())
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if row[k] is None else row[k]) for k in fields})


def finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def spread(xs):
    # The sd to two significant digits and the mean to the same decimal place; very small or large
    # means in scientific notation.
    if not xs:
        return "—"
    mean, sd = mean_sd(xs)
    if sd == 0 or not math.isfinite(sd):
        return f"{mean:.4g}"
    decimals = sd_decimals(sd)
    if abs(mean) < 1e-2 or abs(mean) >= 1e5:
        return f"{mean:.2e} ± {sd:.1e}"
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}"


def table(out, quick, runs, rows):
    """table.md's text: a section per data set, a row per model, mean ± sd of each metric. runs maps
    each finished run, (data set, seed), to its results' "data" (its dim and test_rows)."""
    models = []
    for row in rows:
        if row["model"] not in models:
            models.append(row["model"])
    doc = ["# DKEF §4.2 (Figure 3) on real data, reproduced by kef", ""]
    if quick:
        doc += [QUICK_NOTE, ""]
    for ds, title in DATASETS:
        done = sorted(s for (d, s) in runs if d == ds)
        if not done:
            doc += [f"## {title}", "", "No finished run.", ""]
            continue
        r0 = runs[(ds, done[0])]
        doc += [f"## {title} (D = {r0.get('dim', '?')}, {r0.get('test_rows')} test rows; "
                f"{len(done)} seed{'s' if len(done) != 1 else ''}: {', '.join(map(str, done))})", "",
                "| model | " + " | ".join(t for _, t in METRICS) + " | log-lik. reliable |",
                "|---" * (len(METRICS) + 2) + "|"]
        for m in models:
            cells = []
            rs = [row for row in rows if row["dataset"] == ds and row["model"] == m]
            if not rs:
                continue
            for k, _ in METRICS:
                xs = [row[k] for row in rs if finite(row[k])]
                missing = len(rs) - len(xs)
                c = spread(xs)
                if missing and xs:
                    c += f" (n = {len(xs)})"
                cells.append(c)
            rel = [row["log_likelihood_reliable"] for row in rs if row["log_likelihood_reliable"] is not None]
            cells.append(f"{sum(1 for x in rel if x)}/{len(rel)}" if rel else "—")
            doc.append(f"| {m} | " + " | ".join(cells) + " |")
        doc.append("")
    doc += ["Mean ± sd over the seeds (each seed reshuffles, re-splits, re-dequantises and refits). "
            "FSSD² and the score-matching loss: lower is better; log-likelihood: higher is better (nats per "
            "point, in the whitened space the models are fitted in, as the paper's; summary.csv also has it in data units); the relative-FSSD p-value tests H0 \"the model fits at least as well "
            "as DKEF\": near 0, DKEF fits significantly better; near 1, the model does; DKEF's own row has "
            "none. \"Reliable\": seeds whose log-likelihood the evaluator marked reliable (exact for every "
            "baseline; for KEF and DKEF its importance-sampling estimate and an independent AIS check must agree).", ""]
    tim = os.path.join(out, "timings.tsv")
    if os.path.exists(tim):
        t = read_timings(tim)
        if t:
            doc += ["Wall time per run (s): " + ", ".join(f"{d} seed {s} {x.strip()}" for d, s, x in t), ""]
    return "\n".join(doc)


def write_figure_csv(path, rows):
    # The figure's long table: a panel per data set and metric, a bar per model, a point per seed.
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["panel", "bar", "value"])
        for k, t in METRICS:
            for ds, title in DATASETS:
                for row in rows:
                    if row["dataset"] == ds and finite(row[k]):
                        w.writerow([f"{title}: {t}", row["model"], repr(float(row[k]))])


def collect(out, quick, seeds):
    runs, rows = read_runs(out, seeds)
    if not rows:
        sys.exit(f"reproduce-dkef-real: no finished run in {out}")
    write_summary(os.path.join(out, "summary.csv"), rows)
    write_fits(os.path.join(out, "fits.csv"), runs)
    with open(os.path.join(out, "table.md.tmp"), "w") as fh:
        fh.write(table(out, quick, {k: r["data"] for k, r in runs.items()}, rows))
    write_figure_csv(os.path.join(out, "figure3.csv"), rows)


def retabulate(directory, quick):
    rows, data = read_summary(os.path.join(directory, "summary.csv"))
    if not rows:
        sys.exit(f"reproduce-dkef-real: no row in {os.path.join(directory, 'summary.csv')}")
    write_figure_csv(os.path.join(directory, "figure3.csv"), rows)
    return table(directory, quick, data, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("quick-overrides", help="--quick's --set overrides for a config, one a line")
    p.add_argument("config")
    p = sub.add_parser("collect", help="summary.csv, table.md.tmp and figure3.csv from the finished runs")
    p.add_argument("out", help="the study's output directory")
    p.add_argument("quick", choices=["0", "1"], help="1 for a --quick study")
    p.add_argument("seeds", nargs="*", type=int, help="the seeds whose runs are collected")
    p = sub.add_parser("retabulate", help="the table (stdout) and figure3.csv from summary.csv")
    p.add_argument("dir", help="a directory with summary.csv and timings.tsv")
    p.add_argument("--quick", action="store_true", help="the summary is a --quick study's")
    args = parser.parse_args(argv)
    if args.command == "quick-overrides":
        print("\n".join(quick_overrides(args.config)))
    elif args.command == "collect":
        collect(args.out, args.quick == "1", args.seeds)
    else:
        sys.stdout.write(retabulate(args.dir, args.quick))


if __name__ == "__main__":
    main()
