#!/usr/bin/env bash
# DDE's Table 1 (Dai, Dai, Gretton, Song, Schuurmans, He 2019, §6) with the configs in
# configs/paper/dde/: MMD² (×10⁻³) between 10⁴ model draws and the test rows, for DDE (draws from its
# sampler network) and KEF (the Nyström kernel exponential family, draws by HMC), and the time to
# draw the 10⁴ samples (`kef sample`, the process included), on two moons, rings and grid, over
# several seeds.
#
#   scripts/reproduce-dde-table1.sh [--quick] [--out DIR] [--seeds S,S,...] [--iterations N]
#                                   [--datasets two_moons,rings,grid] [--threads N] [--collect]
#                                   [--resample] [--figure] [KEF]
#
#   KEF           the kef executable (default: build/bin/kef of this repository)
#   --out DIR     where the runs go (default: runs/dde-table1)
#   --seeds       seeds (default 1,2,3): each draws its own data, initialisation and minibatches
#   --iterations  DDE iterations (default 20000, the configs'; the reference trains for 50000)
#   --datasets    which of the three (default all)
#   --threads N   passed to kef (results do not depend on it)
#   --collect     run nothing: write the table from the runs already in DIR
#   --resample    fit nothing: redo the timed draws of the saved models already in DIR (same seeds, so the
#                 same draws), e.g. on an idle machine, then write the table
#   --figure      also draw DIR/figure.png: for each data set, the first seed's 10⁴ DDE and KEF+HMC
#                 draws over that seed's test rows (DDE's Figures 2–3 show its samples this way); the
#                 test rows come from rerunning the KEF cell with [output] save_splits
#   --quick       smoke test: 30 DDE iterations, 500 draws, 300 test rows, two seeds; the numbers mean
#                 nothing, the runs and the table are exercised
#
# Writes DIR/<dataset>/seed<s>/{dde,kef}/ (one kef run each), DIR/<dataset>/seed<s>/<model>.sample_seconds,
# <model>.sample.log (kef sample's report) and, for HMC, <model>.min_ess (its smallest effective sample
# size over the coordinates), and DIR/table.md (mean ± sd over the seeds beside the paper's numbers,
# with HMC's time scaled to 10⁴ effective draws). Stops, naming the run, as soon as one fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "reproduce-dde-table1: $*" >&2; exit 2; }
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

kef="$repo/build/bin/kef" kef_given=0 out="runs/dde-table1" quick=0 collect=0 resample=0 figure=0
seeds=(1 2 3) iterations=20000 datasets=(two_moons rings grid) threads=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --collect) collect=1 ;;
    --resample) resample=1 ;;
    --figure) figure=1 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift ;;
    --threads) [ $# -ge 2 ] || usage; threads=(--threads "$2"); shift ;;
    --iterations)
      [ $# -ge 2 ] || usage
      [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--iterations: '$2' is not a positive integer"
      iterations="$2"; shift ;;
    --seeds)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a seeds <<< "$2"
      [ "${#seeds[@]}" -gt 0 ] || die "--seeds: empty list"
      for s in "${seeds[@]}"; do [[ "$s" =~ ^[0-9]+$ ]] || die "--seeds: '$s' is not a seed (expected integers, e.g. 1,2,3)"; done
      shift ;;
    --datasets)
      [ $# -ge 2 ] || usage
      IFS=, read -r -a datasets <<< "$2"
      for d in "${datasets[@]}"; do
        [[ "$d" =~ ^(two_moons|rings|grid)$ ]] || die "--datasets: '$d' is not one of two_moons, rings, grid"
      done
      shift ;;
    -h|--help) usage ;;
    -*) echo "reproduce-dde-table1: unknown option $1" >&2; usage ;;
    *) [ "$kef_given" -eq 0 ] || usage; kef="$1"; kef_given=1 ;;
  esac
  shift
done

python=/usr/bin/python3
[ -x "$kef" ] || die "no kef executable at $kef (build it, or pass its path)"
[ -x "$python" ] || die "$python is needed to read the results (scripts/install-deps.sh installs it)"
configs="$repo/configs/paper/dde"
draws=10000
if [ "$quick" -eq 1 ]; then seeds=(1 2) iterations=30 draws=500; fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/table.md" "$out/table.md.tmp"

# The paper's protocol (after Sutherland et al. 2017): 500 training rows; 5000 test rows for two moons
# and rings, 1500 for grid.
test_rows() {
  if [ "$quick" -eq 1 ]; then echo 300; elif [ "$1" = grid ]; then echo 1500; else echo 5000; fi
}

# One run: kef run CONFIG into DIR with the cell's settings, then the timed 10⁴ draws of the saved model.
fit_cell() {
  local dataset=$1 seed=$2 model=$3 config=$4 dir=$5
  shift 5  # the rest: extra --set options
  local test val n
  test=$(test_rows "$dataset")
  val=0
  [ "$model" = kef ] && val=125
  n=$((500 + val + test))
  local sets=(--set "seed=$seed" --set "data.type=synthetic/$dataset" --set "data.n=$n"
    --set "data.split.test=$test" --set "evaluate[0].samples=$draws")
  [ "$model" = kef ] && sets+=(--set "data.split.validation=$val")
  [ "$model" = dde ] && sets+=(--set "model[0].estimator.iterations=$iterations"
    --set "model[0].estimator.report_every=$(( iterations < 10 ? 1 : iterations / 10 ))")
  [ "$quick" -eq 1 ] && [ "$model" = dde ] && sets+=(--set "model[0].estimator.diagnostic_samples=200")
  [ "$quick" -eq 1 ] && [ "$model" = kef ] && sets+=(--set "evaluate[0].hmc_warmup=100")
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  echo "reproduce-dde-table1: $dataset seed $seed $model" >&2
  "$kef" run "$config" --output "$dir" --quiet "${threads[@]}" "${sets[@]}" "$@" > "$dir.log" 2>&1 ||
    { cat "$dir.log" >&2; die "kef run failed: $dataset seed $seed $model (log: $dir.log)"; }
}

# The timed draws of a saved model: 10⁴ draws by `kef sample` (the process included), its report kept
# for HMC's effective sample size.
sample_cell() {
  local dataset=$1 seed=$2 model=$3 dir=$4
  [ -d "$dir/models/$model" ] || die "no saved model at $dir/models/$model (run without --resample first)"
  local t0 t1
  t0=$(date +%s.%N)
  # Exit 3: HMC's chains mixed poorly (kef sample's R̂ / ESS check). The draws are kept and the cell is
  # marked in the table, since a poorly mixing KEF+HMC is part of what Table 1 compares.
  local status=0
  rm -f "$dir.poor_mixing" "$dir.min_ess"
  "$kef" sample "$dir/models/$model" -n "$draws" --out "$dir.samples.npy" --seed "$seed" "${threads[@]}" \
    2> "$dir.sample.log" || status=$?
  t1=$(date +%s.%N)
  case $status in
    0) ;;
    3) touch "$dir.poor_mixing" ;;
    *) cat "$dir.sample.log" >&2; die "kef sample failed (exit $status): $dataset seed $seed $model" ;;
  esac
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", b - a}' > "$dir.sample_seconds"
  # "HMC: 4 chains x (...); ...; min ESS 123; ..." when HMC ran (not for DDE's sampler network).
  sed -n 's/.*HMC: .*; min ESS \([^;]*\);.*/\1/p' "$dir.sample.log" | head -n 1 > "$dir.min_ess.tmp"
  if [ -s "$dir.min_ess.tmp" ]; then mv "$dir.min_ess.tmp" "$dir.min_ess"; else rm -f "$dir.min_ess.tmp"; fi
}

if [ "$collect" -eq 0 ]; then
  for dataset in "${datasets[@]}"; do
    for seed in "${seeds[@]}"; do
      for model in dde kef; do
        dir="$out/$dataset/seed$seed/$model"
        [ "$resample" -eq 1 ] || fit_cell "$dataset" "$seed" "$model" "$configs/table1_$model.toml" "$dir"
        sample_cell "$dataset" "$seed" "$model" "$dir"
      done
    done
  done
fi

"$python" - "$out" "$iterations" "$draws" "${datasets[@]}" > "$out/table.md.tmp" <<'PY'
import json, os, statistics, sys
out, iterations, draws, datasets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
paper = {"two_moons": (0.11, 1.32, 0.07, 13.04), "rings": (1.53, 3.19, 0.07, 14.12), "grid": (1.32, 40.39, 0.04, 4.43)}

def cell(values, digits):
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"

print(f"# DDE Table 1 (kef): MMD² ×10⁻³ between {draws} model draws and the test rows, and the seconds "
      f"`kef sample` takes to draw them; mean ± sd over seeds. DDE: {iterations} iterations, draws from "
      "the sampler network; KEF: Nyström (m = 50, σ and λ by held-out score matching), draws by HMC. "
      f"HMC's min ESS is the smallest effective sample size over the coordinates of its {draws} draws; "
      f"\"equal ESS\" scales its time to {draws} effective draws (seconds × {draws} / min ESS), the sampler "
      "network's draws being independent.\n")
print("| data | DDE MMD | KEF MMD | DDE sample (s) | KEF+HMC sample (s) | HMC min ESS | KEF+HMC at equal ESS (s) | seeds | paper: DDE / KEF MMD, DDE / KEF+HMC s |")
print("|---|---|---|---|---|---|---|---|---|")
for d in datasets:
    base = os.path.join(out, d)
    seeds = sorted(s for s in os.listdir(base) if s.startswith("seed")) if os.path.isdir(base) else []
    mmd = {"dde": [], "kef": []}
    secs = {"dde": [], "kef": []}
    poor = 0
    ess, equal = [], []
    for s in seeds:
        for m in ("dde", "kef"):
            res = os.path.join(base, s, m, "results.json")
            if os.path.exists(res):
                mmd[m].append(1e3 * json.load(open(res))["models"][m]["metrics"]["mmd2"])
            t = os.path.join(base, s, m + ".sample_seconds")
            if os.path.exists(t):
                secs[m].append(float(open(t).read()))
            poor += os.path.exists(os.path.join(base, s, m + ".poor_mixing"))
        e = os.path.join(base, s, "kef.min_ess")
        t = os.path.join(base, s, "kef.sample_seconds")
        if os.path.exists(e) and os.path.exists(t):
            value = float(open(e).read())
            ess.append(value)
            if value > 0:
                equal.append(float(open(t).read()) * float(draws) / value)
    p = paper[d]
    hmc = f" (HMC mixed poorly in {poor} of {len(secs['kef'])} runs)" if poor else ""
    print(f"| {d} | {cell(mmd['dde'], 2)} | {cell(mmd['kef'], 2)} | {cell(secs['dde'], 3)} | {cell(secs['kef'], 2)}{hmc} | "
          f"{cell(ess, 0)} | {cell(equal, 1)} | {len(seeds)} | {p[0]} / {p[1]}, {p[2]} / {p[3]} |")
PY
mv "$out/table.md.tmp" "$out/table.md"
echo "reproduce-dde-table1: wrote $out/table.md" >&2

if [ "$figure" -eq 1 ]; then
  seed=${seeds[0]}
  panels=()
  for dataset in "${datasets[@]}"; do
    cell="$out/$dataset/seed$seed"
    for model in dde kef; do
      [ -s "$cell/$model.samples.npy" ] || die "--figure: no draws at $cell/$model.samples.npy (run the cell first)"
    done
    # The KEF cell again, with the same seed and data, for its test rows (the fit is seconds).
    if [ ! -s "$cell/splits/data/test.npy" ]; then
      fit_cell "$dataset" "$seed" kef "$configs/table1_kef.toml" "$cell/splits" --set output.save_splits=true \
        --set output.save_models=false
    fi
    "$kef" scatterplot "DDE, sampler network=$cell/dde.samples.npy" "KEF (Nyström) + HMC=$cell/kef.samples.npy" \
      --reference "$cell/splits/data/test.npy" --reference-label "test rows" --points-label "$draws model draws" \
      --title "$dataset, seed $seed" --columns 2 --out "$out/$dataset/figure.png" 2> "$out/$dataset/figure.log" ||
      { cat "$out/$dataset/figure.log" >&2; die "kef scatterplot failed for $dataset"; }
    panels+=("$out/$dataset/figure.png")
  done
  "$kef" montage "${panels[@]}" --columns 1 --out "$out/figure.png" 2> "$out/figure.log" ||
    { cat "$out/figure.log" >&2; die "kef montage failed"; }
  echo "reproduce-dde-table1: wrote $out/figure.png" >&2
fi
