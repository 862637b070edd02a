#!/usr/bin/env bash
# The experiment of the Nyström KEF poster (Sutherland, Strathmann, Arbel, Gretton, §5) with the
# configs in experiments/nystrom/configs/: held-out Fisher divergence J and fit time against n for the full
# solution, Nyström with m = ceil(n^theta log n) basis points (theta = 1/2 and 1/3) and lite at the
# matched basis size, on D Gaussians at vertices of the D-cube (synthetic/grid) or on the poster's
# concentric rings (synthetic/rings), the bandwidth and λ of each chosen by held-out score matching
# ([tune]), over several seeds.
#
#   experiments/nystrom/reproduce-nystrom.sh [--quick] [--out DIR] [--threads N] [--seeds S,S,...] [--dims D,D,...]
#                                [--sizes N,N,...] [--max-full K] [--target grid|rings] [--collect] [KEF]
#
#   KEF          the kef executable (default: build/bin/kef of this repository)
#   --out DIR    where the runs go (default: runs/nystrom-reproduction)
#   --seeds      seeds (default 1,2,3); each draws its own data, basis points and fits
#   --dims       dimensions D (default 2,5)
#   --sizes      training sizes n (default 100,200,500,1000,2000)
#   --max-full K run `full` only while n·D <= K (default 5000: an n·D system per grid candidate)
#   --target T   grid (default): D Gaussians N(v, 0.1² I) at vertices of {0,1}^D; rings: radii 1, 3, 5
#                with radial noise 0.1 in the first two coordinates, N(0, 0.1²) in the others, and
#                a q0 and bandwidth grid scaled to the rings (q0 = N(0, 6² I), σ in 0.25 … 2)
#   --threads N  passed to kef run (results do not depend on it)
#   --collect    run nothing: collect the table, CSVs and figure from the runs already in DIR (a study
#                stopped part-way; a cell over fewer seeds than listed says how many)
#   --quick      smoke test: D = 2, n = 100 and 200, two seeds, 200 test rows, a 2 x 2 tuning grid;
#                the numbers mean nothing, the runs, the table and the figures are exercised
#
# Writes DIR/D<d>/n<n>/<method>/seed<s>/ (one kef run each), DIR/table.md (mean ± sd over seeds of J
# and the chosen fit's time per D, n and method), DIR/csv/ (one CSV per curve) and DIR/figure.png
# (per D: J against n and fit time against n, log-log, the band spanning the seeds' range).
# Stops, naming the run, as soon as one fails.
set -euo pipefail

usage() { sed -n '9,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "reproduce-nystrom: $*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kef="$repo/build/bin/kef"
out="runs/nystrom-reproduction"
quick=0
collect=0
threads=()
seeds=1,2,3
dims=2,5
sizes=100,200,500,1000,2000
max_full=5000
target=grid
kef_given=0
list_arg() {  # list_arg NAME VALUE: a comma-separated list of positive integers
  [[ "$2" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "reproduce-nystrom: $1: expected integers separated by commas, got '$2'" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --collect) collect=1 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift ;;
    --threads) [ $# -ge 2 ] || usage; threads=(--threads "$2"); shift ;;
    --seeds) [ $# -ge 2 ] || usage; list_arg --seeds "$2"; seeds="$2"; shift ;;
    --dims) [ $# -ge 2 ] || usage; list_arg --dims "$2"; dims="$2"; shift ;;
    --sizes) [ $# -ge 2 ] || usage; list_arg --sizes "$2"; sizes="$2"; shift ;;
    --max-full) [ $# -ge 2 ] || usage; list_arg --max-full "$2"; max_full="$2"; shift ;;
    --target)
      [ $# -ge 2 ] || usage
      case "$2" in grid|rings) target="$2" ;;
        *) echo "reproduce-nystrom: --target: expected grid or rings, got '$2'" >&2; exit 2 ;; esac
      shift ;;
    -h|--help) usage ;;
    -*) echo "reproduce-nystrom: unknown option $1" >&2; usage ;;
    *) [ "$kef_given" -eq 0 ] || usage; kef="$1"; kef_given=1 ;;
  esac
  shift
done
python=/usr/bin/python3
[ -x "$kef" ] || die "no kef executable at $kef (build it, or pass its path)"
[ -x "$python" ] || die "$python is needed to collect the results (scripts/install-deps.sh installs it)"

test_rows=1000
tune_sets=()
target_sets=()
if [ "$target" = rings ]; then
  # The rings span a disc of radius ~5: the grid target's q0 (N(0.5, 2² I)) and bandwidths
  # (0.1 … 0.8) are too narrow for it.
  target_sets=(--set "data.type=synthetic/rings" --set "model[0].base_measure.mean=0.0"
               --set "model[0].base_measure.std=6.0")
  tune_sets=(--set "tune.grid.kernel.sigma=[0.25, 0.5, 1.0, 2.0]")
fi
if [ "$quick" -eq 1 ]; then
  seeds=1,2 dims=2 sizes=100,200 test_rows=200
  tune_sets=(--set "tune.grid.kernel.sigma=[0.2, 0.4]")
fi
configs="$repo/experiments/nystrom/configs"
# The basis sizes, the table and the curves (experiments/nystrom/analysis.py).
analysis="$repo/experiments/nystrom/analysis.py"
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/table.md" "$out/table.md.tmp" "$out/figure.png"
rm -rf "$out/csv"
mkdir -p "$out/logs" "$out/csv"

# run DIR CONFIG [--set K=V]...: one kef run into $out/DIR.
run() {
  local dir="$1" config="$2"
  shift 2
  local log="$out/logs/${dir//\//_}"
  mkdir -p "$(dirname "$out/$dir")"
  rm -rf "${out:?}/$dir"
  if ! "$kef" run "$config" "$@" "${threads[@]}" --output "$out/$dir" --quiet > "$log.out" 2> "$log.err"; then
    tail -n 20 "$log.err" >&2
    die "run $dir failed: $kef run $config $*; stderr in $log.err"
  fi
}

IFS=, read -r -a seed_list <<< "$seeds"
IFS=, read -r -a dim_list <<< "$dims"
IFS=, read -r -a size_list <<< "$sizes"
for d in "${dim_list[@]}"; do
  [ "$collect" -eq 0 ] || break
  for n in "${size_list[@]}"; do
    validation=$(( n / 4 > 100 ? n / 4 : 100 ))
    total=$(( n + validation + test_rows ))
    # m = ceil(n^theta log n), at most n.
    m_half=$("$python" "$analysis" basis-size "$n" half)
    m_third=$("$python" "$analysis" basis-size "$n" third)
    lite_m=$(( m_half * d < n ? m_half * d : n ))
    for s in "${seed_list[@]}"; do
      data=(--set "data.dim=$d" --set "data.n=$total" --set "data.split={ test = $test_rows, validation = $validation }"
            --set "seed=$s" "${target_sets[@]}")
      echo "reproduce-nystrom: D = $d, n = $n, seed $s (m = $m_half and $m_third; lite M = $lite_m)"
      if [ $(( n * d )) -le "$max_full" ]; then
        run "D$d/n$n/full/seed$s" "$configs/full.toml" "${data[@]}" "${tune_sets[@]}"
      fi
      run "D$d/n$n/nystrom_half/seed$s" "$configs/nystrom.toml" "${data[@]}" "${tune_sets[@]}" \
        --set "model[0].estimator.inducing_points=$m_half"
      run "D$d/n$n/nystrom_third/seed$s" "$configs/nystrom.toml" "${data[@]}" "${tune_sets[@]}" \
        --set "model[0].estimator.inducing_points=$m_third"
      run "D$d/n$n/lite/seed$s" "$configs/lite.toml" "${data[@]}" "${tune_sets[@]}" \
        --set "model[0].estimator.inducing_points=$lite_m"
    done
  done
done

# The table and the curves, from the results.json files.
"$python" "$analysis" table "$out" "$quick" "$dims" "$sizes" "$seeds" "$target" > "$out/table.md.tmp"
mv "$out/table.md.tmp" "$out/table.md"

# The figures: per D, J and fit time against n on log-log axes, side by side, the D rows stacked.
pngs=()
for d in "${dim_list[@]}"; do
  for what in J time; do
    series=()
    for key in full nystrom_half nystrom_third lite; do
      csv="$out/csv/D$d-$key-$what.csv"
      [ "$(wc -l < "$csv")" -gt 1 ] || continue
      case "$key" in
        full) label="full" ;; nystrom_half) label="Nyström θ = 1/2" ;;
        nystrom_third) label="Nyström θ = 1/3" ;; lite) label="lite, matched M" ;;
      esac
      series+=("$label=$csv")
    done
    if [ "$what" = J ]; then ylabel="held-out Fisher divergence J"; else ylabel="fit time (s)"; fi
    "$kef" lineplot "${series[@]}" --log-x --log-y --x-label "n (training rows)" --y-label "$ylabel" \
      --title "$target, D = $d" --width 420 --height 300 --out "$out/D$d-$what.png" 2> /dev/null \
      || die "kef lineplot failed for D = $d ($what)"
    pngs+=("$out/D$d-$what.png")
  done
done
"$kef" montage --columns 2 --out "$out/figure.png" "${pngs[@]}" 2> /dev/null || die "kef montage failed"
echo "reproduce-nystrom: wrote $out/table.md and $out/figure.png"
