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
# The quick overrides and the tables (experiments/dkef-synthetic/analysis.py).
analysis="$repo/experiments/dkef-synthetic/analysis.py"
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
  "$python" "$analysis" quick-overrides "$1"
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
"$python" "$analysis" table "$out" "$quick" --runs "${kept_runs[@]}" > "$out/table.md.tmp"
mv "$out/table.md.tmp" "$out/table.md"

# The spread over seeds: the configs' own seed (DIR/<name>) and each of --seeds (DIR/seed-S/<name>).
if [ "${#seeds[@]}" -gt 0 ]; then
  "$python" "$analysis" table-seeds "$out" "$quick" --runs "${kept_runs[@]}" --seeds "${seeds[@]}" \
    > "$out/table-seeds.md.tmp"
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
