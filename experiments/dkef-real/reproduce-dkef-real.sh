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
# data set, seed and model: every metric), DIR/fits.csv (the same rows: how each fit ended and how
# DKEF's and KEF's normaliser was estimated), DIR/table.md (mean ± sd over the seeds, n per cell),
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
# The quick overrides and the summaries (experiments/dkef-real/analysis.py).
analysis="$repo/experiments/dkef-real/analysis.py"
datasets=(redwine whitewine parkinsons)
mkdir -p "$out"
out=$(cd "$out" && pwd)
logs="$out/logs"
mkdir -p "$logs"
# A failed run must not leave an older table or figure looking current.
rm -f "$out/table.md" "$out/table.md.tmp" "$out/summary.csv" "$out/fits.csv" "$out/figure3.png" "$out/figure3.csv"
[ "$collect" -eq 1 ] || : > "$out/timings.tsv"

# --quick: --set overrides for every model of a config, read from the config itself (kef's --set
# selects one model per key, by name), so that the smoke test follows any change to the configs.
quick_overrides() {
  "$python" "$analysis" quick-overrides "$1"
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

# The summaries, the table and the figure's CSV, from the results.json files.
"$python" "$analysis" collect "$out" "$quick" "${seeds[@]}"
mv "$out/table.md.tmp" "$out/table.md"

# Figure 3's layout: a row per metric, a column per data set (those with a finished run).
ncols=$(tail -n +2 "$out/summary.csv" | cut -d, -f1 | sort -u | wc -l)
"$kef" barplot "$out/figure3.csv" --out "$out/figure3.png" --columns "$ncols" \
  --title "DKEF Figure 3 on real data (kef): bar = mean over seeds, dots = seeds" \
  || die "kef barplot failed"
echo "reproduce-dkef-real: wrote $out/table.md, $out/summary.csv, $out/fits.csv, $out/figure3.png"
