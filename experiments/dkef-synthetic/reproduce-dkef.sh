#!/usr/bin/env bash
# Reproduces the synthetic study of DKEF (Wenliang et al., ICML 2019) §4.1 / Figure 2 and its
# Figure 1 with the configs in experiments/dkef-synthetic/configs/, then collects one table and the figures.
#
#   experiments/dkef-synthetic/reproduce-dkef.sh [--quick] [--out DIR] [--threads N] [--seeds S,S,...] [--skip PARTS]
#       [--datasets LIST] [--resume] [KEF]
#
#   KEF          the kef executable (default: build/bin/kef of this repository)
#   --out DIR    where the runs go (default: runs/dkef-reproduction, relative to the current directory)
#   --quick      smoke test: a fifth of the data, at most 50 inducing points, every dkef estimator
#                stops after a few steps, every flow after 2 epochs, the GMM tries K = 1, 2 once, small
#                importance-sampling budgets; the numbers mean nothing, the pipeline, the tables and
#                the figures are exercised
#   --threads N  passed to kef run (results do not depend on it)
#   --seeds LIST also run every config with each of these seeds (`--set seed=S`: the data draw and
#                the fits change) into DIR/seed-S/, and write DIR/table-seeds.md: per model and data
#                set, mean ± sd over the configs' own seed and LIST of the score-matching loss, the
#                Fisher divergence and the log-likelihood
#   --skip PARTS do not run these parts (comma-separated: the baseline configs classical, made,
#                flows; the runs mor_mixture, mixture_baselines, figure1): their rows or columns are
#                left out of the tables and figures (for a compute budget; the full study runs them
#                all). mixture_baselines' rows join the "MoR, 3 clusters" column, so they need
#                mor_mixture's run
#   --datasets LIST  only these of the seven synthetic sets (comma-separated, e.g. funnel,cosine; for
#                a compute budget: the tables then have only their columns)
#   --resume     keep every run whose results.json exists in DIR (an interrupted study resumes;
#                without it every run is redone)
#
# Writes DIR/<name>/ (one kef run each of synthetic.toml's kernel models: funnel banana ring square
# cosine mog mor, then mor_mixture and figure1; each with results.json, log.txt, models/ and
# density.png), DIR/classical/<d>/, DIR/made/<d>/ and DIR/flows/<d>/ (classical_baselines.toml,
# made_baselines.toml and flow_baselines.toml on each of the seven sets),
# DIR/mixture_baselines/mor_mixture/ (mor_mixture_baselines.toml: every baseline as a clustered
# mixture on MoR, with DIR/figure2-mixture-baselines.png its density rows), DIR/table.md (rows = models, kernel models first,
# then the baselines; columns = data sets; held-out score-matching loss, Fisher divergence against
# the truth, log-likelihood; the best Fisher divergence per data set in bold), DIR/figure2.png (the
# kernel models' density rows stacked, one per data set, the clustered mixture on MoR last),
# DIR/figure2-baselines.png (per data set the baseline parts' rows side by side)
# and DIR/figure1.png. Exits non-zero, naming the run, as soon as a run fails.
set -euo pipefail

usage() { sed -n '5,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "reproduce-dkef: $*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kef="$repo/build/bin/kef"
out="runs/dkef-reproduction"
quick=0
threads=()
seeds=()
skip=()
only=()
resume=0
kef_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift ;;
    --threads) [ $# -ge 2 ] || usage; threads=(--threads "$2"); shift ;;
    --seeds)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a seeds <<< "$2"
      for s in "${seeds[@]}"; do
        [[ "$s" =~ ^[0-9]+$ ]] || { echo "reproduce-dkef: --seeds: '$s' is not a seed (expected integers, e.g. 1,2,3)" >&2; exit 2; }
      done
      shift ;;
    --skip)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a skip <<< "$2"
      for p in "${skip[@]}"; do
        [[ "$p" =~ ^(classical|made|flows|mor_mixture|mixture_baselines|figure1)$ ]] || {
          echo "reproduce-dkef: --skip: '$p' is not a part (expected classical, made, flows, mor_mixture, mixture_baselines, figure1)" >&2
          exit 2
        }
      done
      shift ;;
    --resume) resume=1 ;;
    --datasets)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a only <<< "$2"
      for d in "${only[@]}"; do
        [[ "$d" =~ ^(funnel|banana|ring|square|cosine|mog|mor)$ ]] || {
          echo "reproduce-dkef: --datasets: '$d' is not one of funnel, banana, ring, square, cosine, mog, mor" >&2
          exit 2
        }
      done
      shift ;;
    -h|--help) usage ;;
    -*) echo "reproduce-dkef: unknown option $1" >&2; usage ;;
    *) [ "$kef_given" -eq 0 ] || usage; kef="$1"; kef_given=1 ;;
  esac
  shift
done

python=/usr/bin/python3
[ -x "$kef" ] || die "no kef executable at $kef (build it, or pass its path)"
[ -x "$python" ] || die "$python is needed to read the configs and results (scripts/install-deps.sh installs it)"
"$python" -c 'import tomllib' 2>/dev/null || die "$python has no tomllib (Python >= 3.11 needed)"

configs="$repo/experiments/dkef-synthetic/configs"
if [[ " ${skip[*]} " == *" mor_mixture "* && " ${skip[*]} " != *" mixture_baselines "* ]]; then
  echo "reproduce-dkef: --skip mor_mixture: mixture_baselines' rows join mor_mixture's column; skip both" >&2
  exit 2
fi
datasets=(funnel banana ring square cosine mog mor)
[ "${#only[@]}" -eq 0 ] || datasets=("${only[@]}")
mkdir -p "$out"
out=$(cd "$out" && pwd)
logs="$out/logs"
mkdir -p "$logs"
# A failed run must not leave an older table or figure looking current.
rm -f "$out/table.md" "$out/table.md.tmp" "$out/table-seeds.md" "$out/table-seeds.md.tmp" "$out/figure2.png" \
  "$out/figure2-baselines.png" "$out/figure2-mixture-baselines.png" "$out/figure1.png"
[ "$resume" -eq 1 ] || : > "$out/timings.tsv"
touch "$out/timings.tsv"

# --quick: --set overrides for every model of a config, read from the config itself (kef's --set
# selects one model per key, by name), so that the smoke test follows any change to the configs.
quick_overrides() {
  "$python" - "$1" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    cfg = tomllib.load(f)
# A fifth of the data (the same split proportions; at least 100 test rows), M <= 50, a few steps.
data = cfg["data"]
split = data.get("split", {})
n = data.get("n", 10000) // 5
test = max(100, split.get("test", 0) // 5)
validation = split.get("validation", 0) // 5
print(f"data.n={n}")
print("output.plot_grid=60")
print(f"data.split={{ test = {test}, validation = {validation} }}")
dkef = {"max_steps": 10, "eval_every": 5, "stage2_steps": 1, "batch_fit": 50, "batch_loss": 50}
flows = ("made", "made_mog", "maf", "maf_mog", "real_nvp")
for m in cfg.get("model", []):
    est = m["estimator"]
    prefix = f"model.{m['name']}.estimator"
    if est["type"] == "cluster_mixture":
        print(f"{prefix}.normalizer_samples=20000")
        est, prefix = est["inner"], prefix + ".inner"
    if est["type"] in flows:
        print(f"{prefix}.max_epochs=2")
    if est["type"] == "gmm":
        print(f"{prefix}.components=[1, 2]")
        print(f"{prefix}.restarts=1")
    if est["type"] == "dkef":
        for k, v in dkef.items():
            print(f"{prefix}.{k}={v}")
        print(f"{prefix}.inducing_points={min(50, est.get('inducing_points', 300))}")
for i, e in enumerate(cfg.get("evaluate", [])):
    if e["type"] == "log_likelihood" and e.get("method") == "quadrature":
        print(f"evaluate[{i}].grid=64")
    elif e["type"] == "log_likelihood":
        print(f"evaluate[{i}].samples=20000")
        for k in ("bound_percentile_samples", "bound_rho_samples", "bound_variance_samples"):
            print(f"evaluate[{i}].{k}=10000")
PY
}

# run NAME CONFIG [--set K=V]...: one kef run into $out/NAME.
run() {
  local name="$1" config="$2"
  shift 2
  local sets=()
  if [ "$quick" -eq 1 ]; then
    local overrides o
    overrides=$(quick_overrides "$config") || die "could not read $config for --quick"
    while IFS= read -r o; do sets+=(--set "$o"); done <<< "$overrides"
  fi
  if [ "$resume" -eq 1 ] && grep -qs '"status": "complete"' "$out/$name/results.json"; then
    echo "reproduce-dkef: $name: kept (--resume)"
    return 0
  fi
  echo "reproduce-dkef: $name ($(basename "$config"))"
  local start end status=0
  start=$(date +%s%N)
  "$kef" run "$config" "$@" "${sets[@]}" "${threads[@]}" --output "$out/$name" --quiet \
    > "$logs/$name.out" 2> "$logs/$name.err" || status=$?
  end=$(date +%s%N)
  if [ "$status" -ne 0 ]; then
    tail -n 20 "$logs/$name.err" >&2
    local how=""
    [ "$quick" -eq 0 ] || how=" (with --quick's overrides)"
    die "run $name failed (kef exit status $status): $kef run $config $*$how; stderr in $logs/$name.err"
  fi
  cat "$logs/$name.out"
  local ms=$(((end - start) / 1000000))
  printf '%s\t%d.%d\n' "$name" $((ms / 1000)) $((ms % 1000 / 100)) >> "$out/timings.tsv"
}

# The baselines' configs, by part: run on each synthetic set into DIR/<part>/<d>, unless skipped.
parts=()
for p in classical made flows; do
  [[ " ${skip[*]} " == *" $p "* ]] || parts+=("$p")
done
part_config() {
  case "$1" in
    classical) echo "$configs/classical_baselines.toml" ;;
    made) echo "$configs/made_baselines.toml" ;;
    flows) echo "$configs/flow_baselines.toml" ;;
  esac
}
skipped() { [[ " ${skip[*]} " == *" $1 "* ]]; }
# A previous run's optional parts must not leak rows into this run's tables.
if [ "$resume" -eq 0 ]; then
  for p in classical made flows mor_mixture mixture_baselines figure1; do
    rm -rf "${out:?}/$p"
    for s in "${seeds[@]}"; do rm -rf "${out:?}/seed-$s/$p"; done
  done
else
  for p in classical made flows mor_mixture mixture_baselines figure1; do
    skipped "$p" || continue
    rm -rf "${out:?}/$p"
    for s in "${seeds[@]}"; do rm -rf "${out:?}/seed-$s/$p"; done
  done
fi

# run_all PREFIX [--set K=V]...: every run of the reproduction, into $out/PREFIX<name>: per data set
# the kernel models (synthetic.toml) into <d> and each baseline part into <part>/<d>.
run_all() {
  local prefix="$1"
  shift
  for d in "${datasets[@]}"; do
    run "$prefix$d" "$configs/synthetic.toml" --set "data.type=synthetic/$d" "$@"
    for p in "${parts[@]}"; do
      mkdir -p "$out/${prefix}$p" "$logs/${prefix}$p"
      run "${prefix}$p/$d" "$(part_config "$p")" --set "data.type=synthetic/$d" "$@"
    done
  done
  skipped mor_mixture || run "${prefix}mor_mixture" "$configs/mor_mixture.toml" "$@"
  if ! skipped mixture_baselines; then
    mkdir -p "$out/${prefix}mixture_baselines" "$logs/${prefix}mixture_baselines"
    run "${prefix}mixture_baselines/mor_mixture" "$configs/mor_mixture_baselines.toml" "$@"
  fi
  skipped figure1 || run "${prefix}figure1" "$configs/figure1.toml" "$@"
}
run_all ""
for s in "${seeds[@]}"; do
  mkdir -p "$out/seed-$s" "$logs/seed-$s"
  run_all "seed-$s/" --set "seed=$s"
done

# The table, from the results.json files: the runs of this invocation only (--datasets, --skip).
kept_runs=("${datasets[@]}")
skipped mor_mixture || kept_runs+=(mor_mixture)
skipped figure1 || kept_runs+=(figure1)
export REPRODUCE_DKEF_RUNS="${kept_runs[*]}"
"$python" - "$out" "$quick" > "$out/table.md.tmp" <<'PY'
import json, math, os, sys

out, quick = sys.argv[1], sys.argv[2] == "1"
columns = [("funnel", "Funnel"), ("banana", "Banana"), ("ring", "Ring"), ("square", "Square"),
           ("cosine", "Cosine"), ("mog", "MoG"), ("mor", "MoR"), ("mor_mixture", "MoR, 3 clusters")]
columns = [c for c in columns if c[0] in os.environ["REPRODUCE_DKEF_RUNS"].split()]  # --datasets, --skip

def load(name):
    # The kernel models' run, with the baselines' rows (classical/<name>, flows/<name>) appended
    # where those runs exist (the seven synthetic sets).
    with open(os.path.join(out, name, "results.json")) as f:
        r = json.load(f)
    for sub in ("classical", "made", "flows", "mixture_baselines"):
        p = os.path.join(out, sub, name, "results.json")
        if os.path.exists(p):
            with open(p) as f:
                r["models"].update(json.load(f)["models"])
    return r

def fmt(x, spec):
    return "n/a" if x is None or not math.isfinite(x) else format(x, spec)

# The log-likelihood column is normalised by quadrature (exact to ~1e-5 nats in 1-D and 2-D); DKEF's
# importance-sampled value (is.log_likelihood) is marked where it is further than this from it.
IS_DISAGREES = 0.1
# Mark a log-likelihood when the quadrature box's boundary band holds more than this fraction of Ẑ:
# mass beyond the box is then of the same order and can move the two decimals shown (the evaluator's
# own warning, at boundary_tolerance = 1e-6, stays in the notes).
BOUNDARY_MARK = 1e-2

def sig3(x):
    # Three significant digits, trailing zeros kept (12.0, 0.0590), no trailing point (123).
    return "n/a" if x is None or not math.isfinite(x) else format(x, "#.3g").rstrip(".")

def table(names, headers, caption):
    runs = {n: load(n) for n in names}
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

doc = ["# DKEF §4.1 reproduction (kef)", ""]
if quick:
    doc += ["**Quick mode (smoke test): a few training steps only; these numbers are not results.**", ""]
doc += table([c for c, _ in columns], [h for _, h in columns],
             "Held-out score-matching loss / Fisher divergence from the truth / log-likelihood "
             f"(normaliser by quadrature on a 512² grid) on the {load(columns[0][0])['data']['test_rows']} test rows; "
             "lower, lower, higher is better. "
             "Bold: the best Fisher divergence per data set. The truth row gives the true density's "
             "score-matching loss and log-likelihood on the same rows. On Square and Cosine the density "
             "does not vanish at the edge of its support, so the score-matching loss is not the Fisher "
             "divergence plus a constant there (the integration by parts behind it leaves boundary "
             "terms) and can fall below the truth's; the Fisher divergence is computed directly.")
doc += [""]
if "figure1" in os.environ["REPRODUCE_DKEF_RUNS"].split():
    doc += table(["figure1"], ["0.3 N(-1, 0.2²) + 0.7 N(1, 1²)"],
                 f"Figure 1 (1-D), same metrics on its {load('figure1')['data']['test_rows']} test rows.")
doc += ["", "Wall time per run (s): " + ", ".join(
    f"{n} {t}" for n, t in (l.split("\t") for l in open(os.path.join(out, "timings.tsv")).read().split("\n") if l))]
print("\n".join(doc))
PY
mv "$out/table.md.tmp" "$out/table.md"

# The spread over seeds: the configs' own seed (DIR/<name>) and each of --seeds (DIR/seed-S/<name>).
if [ "${#seeds[@]}" -gt 0 ]; then
  "$python" - "$out" "$quick" "${seeds[@]}" > "$out/table-seeds.md.tmp" <<'PY'
import json, math, os, statistics, sys

out, quick, seeds = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
columns = [("funnel", "Funnel"), ("banana", "Banana"), ("ring", "Ring"), ("square", "Square"),
           ("cosine", "Cosine"), ("mog", "MoG"), ("mor", "MoR"), ("mor_mixture", "MoR, 3 clusters"),
           ("figure1", "Figure 1 (1-D)")]
dirs = [out] + [os.path.join(out, f"seed-{s}") for s in seeds]
columns = [c for c in columns if c[0] in os.environ["REPRODUCE_DKEF_RUNS"].split()]  # --datasets, --skip

def load(d, name):
    with open(os.path.join(d, name, "results.json")) as f:
        r = json.load(f)
    for sub in ("classical", "made", "flows", "mixture_baselines"):
        p = os.path.join(d, sub, name, "results.json")
        if os.path.exists(p):
            with open(p) as f:
                r["models"].update(json.load(f)["models"])
    return r

def spread(values):
    # The sd to two significant digits, the mean to the same decimal place.
    xs = [x for x in values if x is not None and math.isfinite(x)]
    if len(xs) < len(values):
        return "n/a"
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    if sd == 0:
        return f"{mean:.3g} ± 0"
    decimals = max(0, 1 - math.floor(math.log10(sd)))
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}"

runs = {n: [load(d, n) for d in dirs] for n, _ in columns}
own_seed = runs[columns[0][0]][0]["seed"]
models = []
for n, _ in columns:
    for m in runs[n][0]["models"]:
        if m not in models:
            models.append(m)
lines = ["# DKEF §4.1 reproduction over seeds (kef)", ""]
if quick:
    lines += ["**Quick mode (smoke test): a few training steps only; these numbers are not results.**", ""]
lines += [f"Held-out score-matching loss / Fisher divergence from the truth / log-likelihood (quadrature for "
          f"the kernel models, exact for the baselines), mean ± sd over {len(dirs)} seeds "
          f"({', '.join(str(s) for s in [own_seed] + seeds)}); each seed draws its own data and fits. "
          "Lower, lower, higher is better.", "",
          "| model | " + " | ".join(h for _, h in columns) + " |", "|---" * (len(columns) + 1) + "|"]
for m in models:
    cells = []
    for n, _ in columns:
        rs = [r["models"].get(m) for r in runs[n]]
        if any(r is None for r in rs):
            cells.append("—")
            continue
        sm = spread([r["metrics"].get("score_matching_loss") for r in rs])
        fd = spread([r["metrics"].get("fisher_divergence") for r in rs])
        ll = spread([r["metrics"].get("log_likelihood") for r in rs])
        cells.append(f"{sm} / {fd} / {ll}")
    lines.append(f"| {m} | " + " | ".join(cells) + " |")
truth = []
for n, _ in columns:
    first = [next(iter(r["models"].values()))["metrics"] for r in runs[n]]
    truth.append(spread([mt.get("score_matching_loss_truth") for mt in first]) + " / 0 / " +
                 spread([mt.get("true_log_likelihood") for mt in first]))
lines.append("| truth | " + " | ".join(truth) + " |")
print("\n".join(lines))
PY
  mv "$out/table-seeds.md.tmp" "$out/table-seeds.md"
fi

# The figures.
pngs=()
figure_runs=("${datasets[@]}")
skipped mor_mixture || figure_runs+=(mor_mixture)
for d in "${figure_runs[@]}"; do
  [ -f "$out/$d/density.png" ] || die "run $d wrote no density.png"
  pngs+=("$out/$d/density.png")
done
"$kef" montage --width 1800 --out "$out/figure2.png" "${pngs[@]}" || die "kef montage failed"
skipped figure1 || cp "$out/figure1/density.png" "$out/figure1.png"
skipped mixture_baselines || cp "$out/mixture_baselines/mor_mixture/density.png" "$out/figure2-mixture-baselines.png"
# The baselines' density rows: per data set each part's figure side by side.
if [ "${#parts[@]}" -gt 0 ]; then
  pngs=()
  for d in "${datasets[@]}"; do
    for p in "${parts[@]}"; do
      [ -f "$out/$p/$d/density.png" ] || die "run $p/$d wrote no density.png"
      pngs+=("$out/$p/$d/density.png")
    done
  done
  "$kef" montage --columns "${#parts[@]}" --width 2400 --out "$out/figure2-baselines.png" "${pngs[@]}" ||
    die "kef montage failed"
fi

if [ "${#seeds[@]}" -gt 0 ]; then
  echo "reproduce-dkef: wrote $out/table.md, $out/table-seeds.md, $out/figure2.png, $out/figure2-baselines.png, $out/figure1.png"
else
  echo "reproduce-dkef: wrote $out/table.md, $out/figure2.png, $out/figure2-baselines.png, $out/figure1.png"
fi
