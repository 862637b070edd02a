"""Analysis of the DKEF synthetic study (reproduce-dkef.sh): --quick's overrides and the tables.

    analysis.py quick-overrides CONFIG
        --set overrides (one KEY=VALUE a line) that make every model of CONFIG a smoke test
    analysis.py table OUT QUICK --runs NAME...
        DIR/table.md's text: per model and data set the held-out score-matching loss, Fisher
        divergence and log-likelihood of the runs in OUT (Figure 1's table when figure1 is a run)
    analysis.py table-seeds OUT QUICK --runs NAME... --seeds S...
        DIR/table-seeds.md's text: the same metrics, mean ± sd over the configs' own seed (OUT) and
        the seeds S (OUT/seed-S)

QUICK is 1 for a --quick study (the tables then say their numbers are not results), 0 otherwise;
--runs names the runs of this invocation (the data sets of --datasets, mor_mixture and figure1 unless
skipped). The tables are written to stdout.
"""
import argparse
import math
import os
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.summary import QUICK_NOTE, load_json, mean_sd, read_timings, two_digit_spread  # noqa: E402

COLUMNS = [("funnel", "Funnel"), ("banana", "Banana"), ("ring", "Ring"), ("square", "Square"),
           ("cosine", "Cosine"), ("mog", "MoG"), ("mor", "MoR"), ("mor_mixture", "MoR, 3 clusters")]
# The baseline parts whose runs, DIR/<part>/<name>, add rows to the kernel models' run DIR/<name>.
BASELINE_PARTS = ("classical", "made", "flows", "mixture_baselines")

# The log-likelihood column is normalised by quadrature (exact to ~1e-5 nats in 1-D and 2-D); DKEF's
# importance-sampled value (is.log_likelihood) is marked where it is further than this from it.
IS_DISAGREES = 0.1
# Mark a log-likelihood when the quadrature box's boundary band holds more than this fraction of Ẑ:
# mass beyond the box is then of the same order and can move the two decimals shown (the evaluator's
# own warning, at boundary_tolerance = 1e-6, stays in the notes).
BOUNDARY_MARK = 1e-2


def quick_overrides(config):
    """--quick's --set overrides for every model of the config, read from the config itself (kef's
    --set selects one model per key, by name), so that the smoke test follows any change to the configs:
    a fifth of the data (the same split proportions; at least 100 test rows), M <= 50, a few steps."""
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    lines = []
    data = cfg["data"]
    split = data.get("split", {})
    n = data.get("n", 10000) // 5
    test = max(100, split.get("test", 0) // 5)
    validation = split.get("validation", 0) // 5
    lines.append(f"data.n={n}")
    lines.append("output.plot_grid=60")
    lines.append(f"data.split={{ test = {test}, validation = {validation} }}")
    dkef = {"max_steps": 10, "eval_every": 5, "stage2_steps": 1, "batch_fit": 50, "batch_loss": 50}
    flows = ("made", "made_mog", "maf", "maf_mog", "real_nvp")
    for m in cfg.get("model", []):
        est = m["estimator"]
        prefix = f"model.{m['name']}.estimator"
        if est["type"] == "cluster_mixture":
            lines.append(f"{prefix}.normalizer_samples=20000")
            est, prefix = est["inner"], prefix + ".inner"
        if est["type"] in flows:
            lines.append(f"{prefix}.max_epochs=2")
        if est["type"] == "gmm":
            lines.append(f"{prefix}.components=[1, 2]")
            lines.append(f"{prefix}.restarts=1")
        if est["type"] == "dkef":
            for k, v in dkef.items():
                lines.append(f"{prefix}.{k}={v}")
            lines.append(f"{prefix}.inducing_points={min(50, est.get('inducing_points', 300))}")
    for i, e in enumerate(cfg.get("evaluate", [])):
        if e["type"] == "log_likelihood" and e.get("method") == "quadrature":
            lines.append(f"evaluate[{i}].grid=64")
        elif e["type"] == "log_likelihood":
            lines.append(f"evaluate[{i}].samples=20000")
            for k in ("bound_percentile_samples", "bound_rho_samples", "bound_variance_samples"):
                lines.append(f"evaluate[{i}].{k}=10000")
    return lines


def load_run(directory, name):
    """The kernel models' run directory/name, with the baselines' rows (directory/<part>/<name>)
    appended where those runs exist (the seven synthetic sets)."""
    r = load_json(os.path.join(directory, name, "results.json"))
    for sub in BASELINE_PARTS:
        p = os.path.join(directory, sub, name, "results.json")
        if os.path.exists(p):
            r["models"].update(load_json(p)["models"])
    return r


def fmt(x, spec):
    return "n/a" if x is None or not math.isfinite(x) else format(x, spec)


def sig3(x):
    # Three significant digits, trailing zeros kept (12.0, 0.0590), no trailing point (123).
    return "n/a" if x is None or not math.isfinite(x) else format(x, "#.3g").rstrip(".")


def metrics_table(out, names, headers, caption):
    """The lines of one table: a row per model, a column per run, the truth's row last."""
    runs = {n: load_run(out, n) for n in names}
    models = []
    for n in names:
        for m in runs[n]["models"]:
            if m not in models:
                models.append(m)
    # Best Fisher divergence per data set (ties all bold).
    best = {}
    for n in names:
        fds = [v["metrics"].get("fisher_divergence") for v in runs[n]["models"].values()]
        fds = [x for x in fds if x is not None and math.isfinite(x)]
        best[n] = min(fds) if fds else None
    lines = [caption, "", "| model | " + " | ".join(headers) + " |", "|---" * (len(names) + 1) + "|"]
    marks = set()
    for m in models:
        cells = []
        for n in names:
            v = runs[n]["models"].get(m)
            if v is None:
                cells.append("—")
                continue
            mt = v["metrics"]
            fd = mt.get("fisher_divergence")
            fd_s = sig3(fd)
            if fd is not None and fd == best[n]:
                fd_s = f"**{fd_s}**"
            ll_s = fmt(mt.get("log_likelihood"), ".2f")
            ll, ll_is = mt.get("log_likelihood"), mt.get("is.log_likelihood")
            if ll is not None and ll_is is not None and not abs(ll_is - ll) <= IS_DISAGREES:
                ll_s += f" (IS {fmt(ll_is, '.2f')}†)"
                marks.add("†")
            blm = mt.get("boundary_log_mass")
            if blm is not None and blm > math.log(BOUNDARY_MARK):
                ll_s += "‡"
                marks.add("‡")
            cells.append(f"{fmt(mt.get('score_matching_loss'), '.2f')} / {fd_s} / {ll_s}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    truth = []
    for n in names:
        mt = next(iter(runs[n]["models"].values()))["metrics"]
        truth.append(f"{fmt(mt.get('score_matching_loss_truth'), '.2f')} / 0 / "
                     f"{fmt(mt.get('true_log_likelihood'), '.2f')}")
    lines.append("| truth | " + " | ".join(truth) + " |")
    if "†" in marks:
        lines += ["", f"† DKEF's own evaluation, importance sampling from the learned q0 (10⁶ proposals), is "
                  f"more than {IS_DISAGREES} nats from the quadrature value: q0 can shrink while f grows to "
                  "compensate, so few proposals reach where p~ has its mass and log Ẑ comes out too small "
                  "(the log-likelihood too high, even above the truth's). See is.effective_sample_size and "
                  "the notes in the run's results.json."]
    if "‡" in marks:
        lines += ["", f"‡ The quadrature box's outer band holds more than {BOUNDARY_MARK:g} of the model's mass "
                  "(see the evaluator's boundary warning): the model puts mass away from the data, possibly "
                  "beyond the box, so log Ẑ may be too small and the log-likelihood too high. A kernel on linear "
                  "features is unbounded and can do this where score matching sees no data."]
    return lines


def table(out, quick, runs):
    """table.md's text: the synthetic sets' table, then Figure 1's, then the wall times."""
    columns = [c for c in COLUMNS if c[0] in runs]  # --datasets, --skip
    doc = ["# DKEF §4.1 reproduction (kef)", ""]
    if quick:
        doc += [QUICK_NOTE, ""]
    doc += metrics_table(
        out, [c for c, _ in columns], [h for _, h in columns],
        "Held-out score-matching loss / Fisher divergence from the truth / log-likelihood "
        f"(normaliser by quadrature on a 512² grid) on the {load_run(out, columns[0][0])['data']['test_rows']} test rows; "
        "lower, lower, higher is better. "
        "Bold: the best Fisher divergence per data set. The truth row gives the true density's "
        "score-matching loss and log-likelihood on the same rows. On Square and Cosine the density "
        "does not vanish at the edge of its support, so the score-matching loss is not the Fisher "
        "divergence plus a constant there (the integration by parts behind it leaves boundary "
        "terms) and can fall below the truth's; the Fisher divergence is computed directly.")
    doc += [""]
    if "figure1" in runs:
        doc += metrics_table(out, ["figure1"], ["0.3 N(-1, 0.2²) + 0.7 N(1, 1²)"],
                             f"Figure 1 (1-D), same metrics on its {load_run(out, 'figure1')['data']['test_rows']} test rows.")
    doc += ["", "Wall time per run (s): " + ", ".join(
        f"{n} {t}" for n, t in read_timings(os.path.join(out, "timings.tsv")))]
    return "\n".join(doc)


def seed_spread(values):
    # The sd to two significant digits, the mean to the same decimal place; n/a when a seed's value is missing.
    xs = [x for x in values if x is not None and math.isfinite(x)]
    if len(xs) < len(values):
        return "n/a"
    mean, sd = mean_sd(xs)
    if sd == 0:
        return f"{mean:.3g} ± 0"
    return two_digit_spread(mean, sd)


def table_seeds(out, quick, runs, seeds):
    """table-seeds.md's text: the spread over the configs' own seed (out/<name>) and each of seeds
    (out/seed-S/<name>)."""
    columns = COLUMNS + [("figure1", "Figure 1 (1-D)")]
    dirs = [out] + [os.path.join(out, f"seed-{s}") for s in seeds]
    columns = [c for c in columns if c[0] in runs]  # --datasets, --skip
    loaded = {n: [load_run(d, n) for d in dirs] for n, _ in columns}
    own_seed = loaded[columns[0][0]][0]["seed"]
    models = []
    for n, _ in columns:
        for m in loaded[n][0]["models"]:
            if m not in models:
                models.append(m)
    lines = ["# DKEF §4.1 reproduction over seeds (kef)", ""]
    if quick:
        lines += [QUICK_NOTE, ""]
    lines += [f"Held-out score-matching loss / Fisher divergence from the truth / log-likelihood (quadrature for "
              f"the kernel models, exact for the baselines), mean ± sd over {len(dirs)} seeds "
              f"({', '.join(str(s) for s in [own_seed] + seeds)}); each seed draws its own data and fits. "
              "Lower, lower, higher is better.", "",
              "| model | " + " | ".join(h for _, h in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for m in models:
        cells = []
        for n, _ in columns:
            rs = [r["models"].get(m) for r in loaded[n]]
            if any(r is None for r in rs):
                cells.append("—")
                continue
            sm = seed_spread([r["metrics"].get("score_matching_loss") for r in rs])
            fd = seed_spread([r["metrics"].get("fisher_divergence") for r in rs])
            ll = seed_spread([r["metrics"].get("log_likelihood") for r in rs])
            cells.append(f"{sm} / {fd} / {ll}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    truth = []
    for n, _ in columns:
        first = [next(iter(r["models"].values()))["metrics"] for r in loaded[n]]
        truth.append(seed_spread([mt.get("score_matching_loss_truth") for mt in first]) + " / 0 / " +
                     seed_spread([mt.get("true_log_likelihood") for mt in first]))
    lines.append("| truth | " + " | ".join(truth) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("quick-overrides", help="--quick's --set overrides for a config, one a line")
    p.add_argument("config")
    for name in ("table", "table-seeds"):
        p = sub.add_parser(name, help=f"the text of {name}.md, on stdout")
        p.add_argument("out", help="the study's output directory")
        p.add_argument("quick", choices=["0", "1"], help="1 for a --quick study")
        p.add_argument("--runs", nargs="+", required=True, help="the runs of this invocation")
        if name == "table-seeds":
            p.add_argument("--seeds", nargs="+", required=True, help="the seeds of --seeds (DIR/seed-S)")
    args = parser.parse_args(argv)
    if args.command == "quick-overrides":
        print("\n".join(quick_overrides(args.config)))
    elif args.command == "table":
        print(table(args.out, args.quick == "1", args.runs))
    else:
        print(table_seeds(args.out, args.quick == "1", args.runs, args.seeds))


if __name__ == "__main__":
    main()
