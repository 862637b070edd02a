#!/usr/bin/env bash
# Reproduces the DDE, LSCDE, ε-KDE and KCEF columns of DDE's Table 2 (Dai et al., AISTATS 2019): the negative
# log-likelihood of p(y | x) on 16 conditional benchmarks, mean ± sd over random 50/50 splits, with x
# and y standardised by the training statistics (experiments/dde-table2/configs/), beside the paper's.
#
#   experiments/dde-table2/reproduce-dde-table2.sh [--quick] [--out DIR] [--raw DIR] [--seeds S,S,...] [--threads N]
#                                   [--dde-iterations N] [--collect-only] [--sets LIST]
#                                   [--models LIST] [--set KEY=VALUE]... [--reference-settings] [KEF]
#
#   KEF          the kef executable (default: build/bin/kef of this repository)
#   --out DIR    where the data, runs and table go (default: runs/dde-table2)
#   --raw DIR    the R data sets as CSV (default: data/ in the repository)
#   --quick      smoke test: splits 0 and 1 of three small sets (CobarOre, UN3, geyser; --sets
#                overrides), the full grids, DDE for 100 iterations; seconds
#   --sets LIST  only these data sets (comma-separated; default all 16)
#   --models LIST  only these of each config's models (comma-separated, of lscde, eps_kde, kcef,
#                dde_conditional; default all): the configs are copied to DIR/configs without the others
#   --set KEY=VALUE  passed to every kef run (e.g. --set model.kcef.estimator.grid_extensions=3)
#   --reference-settings  dde_conditional with the reference implementation's per-set f_bd, base_sd
#                and lambda (experiments/dde-table2/configs/reference-settings.csv) instead of the
#                configs' defaults
#   --seeds LIST the splits (default 0,1,...,19: 20 splits); split S is `--set seed=S`, which
#                reshuffles the rows before the 50/50 split
#   --threads N  passed to kef run (results do not depend on it)
#   --dde-iterations N  training iterations of dde_conditional (default: the config's, the reference's
#                50000; --quick: 100, a smoke test of the column, not a result)
#   --collect-only  run nothing: tabulate the runs of --seeds already in DIR (e.g. splits run by
#                separate invocations); --dde-iterations then only labels the table
#
# Writes DIR/data/<set>.csv (experiments/dde-table2/dde_conditional_data.py), DIR/<set>/seed-S/ (one kef run each),
# DIR/summary.csv (set, seed, model, conditional_nll) and DIR/table.md (mean ± sd per set and method,
# the paper's numbers beside them). Exits non-zero, naming the run, as soon as a run fails.
set -euo pipefail

usage() { sed -n '6,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "reproduce-dde-table2: $*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kef="$repo/build/bin/kef"
out="runs/dde-table2"
raw="$repo/data"
threads=()
seeds=()
quick=0
collect_only=0
dde_iterations=""
sets_given=()
models_given=""
extra_sets=()
reference_settings=0
kef_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --collect-only) collect_only=1 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift ;;
    --raw) [ $# -ge 2 ] || usage; raw="$2"; shift ;;
    --threads) [ $# -ge 2 ] || usage; threads=(--threads "$2"); shift ;;
    --dde-iterations)
      [ $# -ge 2 ] || usage
      [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "reproduce-dde-table2: --dde-iterations: '$2' is not a positive integer" >&2; exit 2; }
      dde_iterations="$2"; shift ;;
    --seeds)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a seeds <<< "$2"
      [ "${#seeds[@]}" -gt 0 ] || { echo "reproduce-dde-table2: --seeds: empty list" >&2; exit 2; }
      for s in "${seeds[@]}"; do
        [[ "$s" =~ ^[0-9]+$ ]] || { echo "reproduce-dde-table2: --seeds: '$s' is not a seed (expected integers, e.g. 0,1,2)" >&2; exit 2; }
      done
      shift ;;
    --sets)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a sets_given <<< "$2"
      [ "${#sets_given[@]}" -gt 0 ] || { echo "reproduce-dde-table2: --sets: empty list" >&2; exit 2; }
      shift ;;
    --models)
      [ $# -ge 2 ] || usage
      [[ "$2" =~ ^(lscde|eps_kde|kcef|dde_conditional)(,(lscde|eps_kde|kcef|dde_conditional))*$ ]] ||
        { echo "reproduce-dde-table2: --models: '$2' is not a list of lscde, eps_kde, kcef, dde_conditional" >&2; exit 2; }
      models_given="$2"; shift ;;
    --set) [ $# -ge 2 ] || usage; extra_sets+=(--set "$2"); shift ;;
    --reference-settings) reference_settings=1 ;;
    -h|--help) usage ;;
    -*) echo "reproduce-dde-table2: unknown option $1" >&2; usage ;;
    *) [ "$kef_given" -eq 0 ] || usage; kef="$1"; kef_given=1 ;;
  esac
  shift
done
if [ "${#seeds[@]}" -eq 0 ]; then
  if [ "$quick" -eq 1 ]; then seeds=(0 1); else seeds=($(seq 0 19)); fi
fi
if [ -z "$dde_iterations" ] && [ "$quick" -eq 1 ]; then dde_iterations=100; fi
dde_set=()
if [ -n "$dde_iterations" ] && { [ -z "$models_given" ] || [[ ",$models_given," == *,dde_conditional,* ]]; }; then
  dde_set=(--set "model.dde_conditional.estimator.iterations=$dde_iterations")
fi

python=/usr/bin/python3
[ -x "$kef" ] || die "no kef executable at $kef (build it, or pass its path)"
[ -x "$python" ] || die "$python is needed to convert the data and collect the table"
[ -d "$raw" ] || die "no raw data directory $raw (pass --raw DIR)"

configs="$repo/experiments/dde-table2/configs"
# The configs of --models and the table (experiments/dde-table2/analysis.py).
analysis="$repo/experiments/dde-table2/analysis.py"
sets=(geyser caution ftcollinssnow highway snowgeese GAGurine topo CobarOre mcycle BigMac2003 cpus crabs birthwt gilgais UN3 ufc)
if [ "${#sets_given[@]}" -gt 0 ]; then
  for set in "${sets_given[@]}"; do
    [ -f "$configs/$set.toml" ] || { echo "reproduce-dde-table2: --sets: no data set '$set' (expected some of: ${sets[*]})" >&2; exit 2; }
  done
  sets=("${sets_given[@]}")
elif [ "$quick" -eq 1 ]; then
  sets=(CobarOre UN3 geyser)
fi
mkdir -p "$out"
if [ "$collect_only" -eq 0 ]; then
  "$python" "$repo/experiments/dde-table2/dde_conditional_data.py" "$out/data" "$raw" || die "converting the data failed"
fi
# --models: copies of the configs with only those [[model]] tables (each runs from the line
# `[[model]]` to the next top-level table that is not one of its own `[model.*]` tables).
if [ -n "$models_given" ] && [ "$collect_only" -eq 0 ]; then
  mkdir -p "$out/configs"
  "$python" "$analysis" filter-configs "$configs" "$out/configs" "$models_given" "${sets[@]}" ||
    die "filtering the configs failed"
  configs="$out/configs"
fi

# --reference-settings: the set's row of reference-settings.csv as --set options of dde_conditional.
set_settings() {
  local set=$1 file="$repo/experiments/dde-table2/configs/reference-settings.csv" line
  setting_sets=()
  [ "$reference_settings" -eq 1 ] || return 0
  line=$(grep -v '^#' "$file" | awk -F, -v s="$set" '$1 == s')
  [ -n "$line" ] || die "$file has no row for $set"
  local name fbd sd lam
  IFS=, read -r name fbd sd lam <<< "$line"
  setting_sets=(--set "model.dde_conditional.estimator.f_bd=$fbd" --set "model.dde_conditional.estimator.base_sd=$sd"
    --set "model.dde_conditional.estimator.lambda=$lam")
}

for s in "${seeds[@]}"; do
  [ "$collect_only" -eq 0 ] || break
  for set in "${sets[@]}"; do
    run="$out/$set/seed-$s"
    rm -rf "$run"
    set_settings "$set"
    if ! "$kef" run "$configs/$set.toml" --quiet "${threads[@]}" "${dde_set[@]}" "${extra_sets[@]}" "${setting_sets[@]}" --set "seed=$s" \
        --set "data.path=$(cd "$out/data" && pwd)/$set.csv" --output "$run" > "$out/last-run.log" 2>&1; then
      cat "$out/last-run.log" >&2
      die "run $set, split $s failed (log above)"
    fi
  done
done

"$python" "$analysis" table "$out" "${seeds[*]}" "${dde_iterations:-50000}" "${sets[@]}"
