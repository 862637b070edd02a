#!/usr/bin/env bash
# Reproduces DKEF's real-data study (Wenliang et al., ICML 2019, §4.2 / Figure 3) on RedWine, WhiteWine
# and Parkinsons with experiments/dkef-real/configs/real_*.toml (DKEF, KEF and the likelihood baselines), over
# several seeds, then collects a table (mean ± sd per model, data set and metric) and a figure.
#
#   experiments/dkef-real/reproduce-dkef-real.sh [--quick] [--out DIR] [--threads N] [--seeds S,S,...] [--collect] [KEF]
#
#   KEF          the kef executable (default: build/bin/kef of this repository)
#   --out DIR    where the runs go (default: runs/dkef-real, relative to the current directory)
#   --quick      smoke test: a few training steps and epochs, small networks, tiny evaluation budgets;
#                the numbers mean nothing, the configs, the table and the figure are exercised
#   --threads N  passed to kef run (results do not depend on it)
#   --seeds LIST the seeds (default: the paper's 15, 0,1,...,14); each seed reshuffles, re-splits and
#                re-dequantises the data and refits every model (`--set seed=S`)
#   --collect    run nothing: collect the table and the figure from the complete runs already in DIR
#                (a seed is used for a data set when its run finished; the table says how many)
#
# Runs seed by seed (every data set for seed 0, then seed 1, ...), so that a run stopped early leaves
# whole seeds behind. Writes DIR/<dataset>/seed-S/ (one kef run each), DIR/summary.csv (one row per
# data set, seed and model: every metric), DIR/table.md (mean ± sd over the seeds, n per cell),
# DIR/figure3.png (Figure 3's layout: a panel per data set and metric, a bar per model at its mean and
# a point per seed) and DIR/timings.tsv. Exits non-zero, naming the run, as soon as a run fails.
set -euo pipefail

usage() { sed -n '6,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "reproduce-dkef-real: $*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kef="$repo/build/bin/kef"
out="runs/dkef-real"
quick=0
collect=0
threads=()
seeds=(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14)
kef_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --collect) collect=1 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift ;;
    --threads) [ $# -ge 2 ] || usage; threads=(--threads "$2"); shift ;;
    --seeds)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a seeds <<< "$2"
      [ "${#seeds[@]}" -gt 0 ] || { echo "reproduce-dkef-real: --seeds: empty list" >&2; exit 2; }
      for s in "${seeds[@]}"; do
        [[ "$s" =~ ^[0-9]+$ ]] || { echo "reproduce-dkef-real: --seeds: '$s' is not a seed (expected integers, e.g. 0,1,2)" >&2; exit 2; }
      done
      shift ;;
    -h|--help) usage ;;
    -*) echo "reproduce-dkef-real: unknown option $1" >&2; usage ;;
    *) [ "$kef_given" -eq 0 ] || usage; kef="$1"; kef_given=1 ;;
  esac
  shift
done

python=/usr/bin/python3
[ -x "$kef" ] || die "no kef executable at $kef (build it, or pass its path)"
[ -x "$python" ] || die "$python is needed to read the configs and results (scripts/install-deps.sh installs it)"
"$python" -c 'import tomllib' 2>/dev/null || die "$python has no tomllib (Python >= 3.11 needed)"

configs="$repo/experiments/dkef-real/configs"
datasets=(redwine whitewine parkinsons)
mkdir -p "$out"
out=$(cd "$out" && pwd)
logs="$out/logs"
mkdir -p "$logs"
# A failed run must not leave an older table or figure looking current.
rm -f "$out/table.md" "$out/table.md.tmp" "$out/summary.csv" "$out/figure3.png" "$out/figure3.csv"
[ "$collect" -eq 1 ] || : > "$out/timings.tsv"

# --quick: --set overrides for every model of a config, read from the config itself (kef's --set
# selects one model per key, by name), so that the smoke test follows any change to the configs.
quick_overrides() {
  "$python" - "$1" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    cfg = tomllib.load(f)
dkef = {"max_steps": 6, "eval_every": 3, "stage2_steps": 1, "batch_fit": 50, "batch_loss": 50,
        "inducing_points": 30}
flow = {"max_epochs": 2, "hidden_units": "[8, 8]", "layers": 2, "components": 2}
for m in cfg.get("model", []):
    est, prefix = m["estimator"], f"model.{m['name']}.estimator"
    if est["type"] == "dkef":
        for k, v in dkef.items():
            print(f"{prefix}.{k}={v}")
    elif est["type"] in ("made", "made_mog", "maf", "maf_mog", "real_nvp"):
        for k, v in flow.items():
            if k == "layers" and est["type"] in ("made", "made_mog"):
                continue
            if k == "components" and est["type"] not in ("made_mog", "maf_mog"):
                continue
            print(f"{prefix}.{k}={v}")
    elif est["type"] == "gmm":
        print(f"{prefix}.components=[1, 2]")
        print(f"{prefix}.restarts=1")
for i, e in enumerate(cfg.get("evaluate", [])):
    if e["type"] in ("fssd", "relative_fssd"):
        print(f"evaluate[{i}].J=10")
    if e["type"] == "fssd":
        print(f"evaluate[{i}].null_draws=200")
    if e["type"] == "log_likelihood":
        print(f"evaluate[{i}].samples=4096")
        print(f"evaluate[{i}].ais_particles=16")
        print(f"evaluate[{i}].ais_temperatures=5")
PY
}

# run DATASET SEED: one kef run into $out/DATASET/seed-SEED.
run() {
  local ds="$1" seed="$2" config="$configs/real_$1.toml" name="$1/seed-$2"
  local sets=(--set "seed=$seed")
  if [ "$quick" -eq 1 ]; then
    local overrides o
    overrides=$(quick_overrides "$config") || die "could not read $config for --quick"
    while IFS= read -r o; do sets+=(--set "$o"); done <<< "$overrides"
  fi
  echo "reproduce-dkef-real: $name ($(basename "$config"))"
  mkdir -p "$logs/$ds"
  rm -rf "$out/$name"
  local start end status=0
  start=$(date +%s%N)
  "$kef" run "$config" "${sets[@]}" "${threads[@]}" --output "$out/$name" --quiet \
    > "$logs/$name.out" 2> "$logs/$name.err" || status=$?
  end=$(date +%s%N)
  if [ "$status" -ne 0 ]; then
    tail -n 20 "$logs/$name.err" >&2
    local how=""
    [ "$quick" -eq 0 ] || how=" (with --quick's overrides)"
    die "run $name failed (kef exit status $status): $kef run $config --set seed=$seed$how; stderr in $logs/$name.err"
  fi
  local ms=$(((end - start) / 1000000))
  printf '%s\t%s\t%d.%d\n' "$ds" "$seed" $((ms / 1000)) $((ms % 1000 / 100)) >> "$out/timings.tsv"
}

if [ "$collect" -eq 0 ]; then
  for s in "${seeds[@]}"; do
    for d in "${datasets[@]}"; do run "$d" "$s"; done
  done
fi

# The summary, the table and the figure's CSV, from the results.json files.
"$python" - "$out" "$quick" "${seeds[@]}" <<'PY'
import csv, json, math, os, statistics, sys

out, quick, seeds = sys.argv[1], sys.argv[2] == "1", [int(s) for s in sys.argv[3:]]
datasets = [("redwine", "RedWine"), ("whitewine", "WhiteWine"), ("parkinsons", "Parkinsons")]
# (key in results.json, column of the table / panel title, decimals)
metrics = [("fssd2", "FSSD²"), ("relative_fssd_pvalue", "rel. FSSD p-value vs DKEF"),
           ("score_matching_loss", "score-matching loss"), ("log_likelihood", "log-likelihood (whitened)")]

rows, runs = [], {}
for ds, _ in datasets:
    for s in seeds:
        f = os.path.join(out, ds, f"seed-{s}", "results.json")
        if not os.path.exists(f):
            continue
        with open(f) as fh:
            r = json.load(fh)
        if r.get("seed") != s:
            sys.exit(f"reproduce-dkef-real: {f} ran with seed {r.get('seed')}, expected {s}")
        runs[(ds, s)] = r
        for model, v in r["models"].items():
            mt = v["metrics"]
            row = {"dataset": ds, "seed": s, "model": model, "dim": r["data"].get("dim", len(r["data"].get("columns", []))),
                   "test_rows": r["data"].get("test_rows")}
            for k, _ in metrics:
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
if not rows:
    sys.exit(f"reproduce-dkef-real: no finished run in {out}")

fields = list(rows[0].keys())
with open(os.path.join(out, "summary.csv"), "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=fields)
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if row[k] is None else row[k]) for k in fields})

def finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)

def spread(xs):
    if not xs:
        return "—"
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    if sd == 0 or not math.isfinite(sd):
        return f"{mean:.4g}"
    decimals = max(0, 1 - math.floor(math.log10(sd)))
    if abs(mean) < 1e-2 or abs(mean) >= 1e5:
        return f"{mean:.2e} ± {sd:.1e}"
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}"

models = []
for row in rows:
    if row["model"] not in models:
        models.append(row["model"])
doc = ["# DKEF §4.2 (Figure 3) on real data, reproduced by kef", ""]
if quick:
    doc += ["**Quick mode (smoke test): a few training steps only; these numbers are not results.**", ""]
for ds, title in datasets:
    done = sorted(s for (d, s) in runs if d == ds)
    if not done:
        doc += [f"## {title}", "", "No finished run.", ""]
        continue
    r0 = runs[(ds, done[0])]
    doc += [f"## {title} (D = {r0['data'].get('dim', '?')}, {r0['data'].get('test_rows')} test rows; "
            f"{len(done)} seed{'s' if len(done) != 1 else ''}: {', '.join(map(str, done))})", "",
            "| model | " + " | ".join(t for _, t in metrics) + " | log-lik. reliable |",
            "|---" * (len(metrics) + 2) + "|"]
    for m in models:
        cells = []
        rs = [row for row in rows if row["dataset"] == ds and row["model"] == m]
        if not rs:
            continue
        for k, _ in metrics:
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
    t = [l.split("\t") for l in open(tim).read().split("\n") if l]
    if t:
        doc += ["Wall time per run (s): " + ", ".join(f"{d} seed {s} {x.strip()}" for d, s, x in t), ""]
with open(os.path.join(out, "table.md.tmp"), "w") as fh:
    fh.write("\n".join(doc))

# The figure's long table: a panel per data set and metric, a bar per model, a point per seed.
with open(os.path.join(out, "figure3.csv"), "w", newline="") as fh:
    w = csv.writer(fh)
    w.writerow(["panel", "bar", "value"])
    for k, t in metrics:
        for ds, title in datasets:
            for row in rows:
                if row["dataset"] == ds and finite(row[k]):
                    w.writerow([f"{title}: {t}", row["model"], repr(float(row[k]))])
PY
mv "$out/table.md.tmp" "$out/table.md"

# Figure 3's layout: a row per metric, a column per data set (those with a finished run).
ncols=$(tail -n +2 "$out/summary.csv" | cut -d, -f1 | sort -u | wc -l)
"$kef" barplot "$out/figure3.csv" --out "$out/figure3.png" --columns "$ncols" \
  --title "DKEF Figure 3 on real data (kef): bar = mean over seeds, dots = seeds" \
  || die "kef barplot failed"
echo "reproduce-dkef-real: wrote $out/table.md, $out/summary.csv, $out/figure3.png"
